import { type LookupAddress, type LookupOptions, lookup } from "node:dns";
import { addressProblem } from "../../core/destination-rules";

/** What a refused destination's error says (the delivery fails for good with it). */
export const PRIVATE_DESTINATION = "EJOBSCHED_PRIVATE_DESTINATION";

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that refuses a name resolving to a loopback, private,
 * link-local, metadata or other special-purpose address (destination-rules.ts: the same
 * classes create refuses, NAT64, 6to4, Teredo and IPv4-compatible IPv6 among them): the check
 * is on the very addresses the socket then connects to, so a name that changes its answer
 * between a check and the connect (DNS rebinding) is refused too. Every address of the answer
 * must be public, whichever one Node picks.
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    const refused = addresses
      .map((a) => ({ address: a.address, problem: addressProblem(a.address) }))
      .find((a) => a.problem !== undefined);
    if (refused) {
      const problem = Object.assign(
        new Error(
          `${hostname} resolves to ${refused.address}, which ${refused.problem} (not a public address)`,
        ),
        { code: PRIVATE_DESTINATION },
      );
      callback(problem, []);
      return;
    }
    if (options.all) callback(null, addresses);
    else {
      const first = addresses[0] as LookupAddress;
      callback(null, first.address, first.family);
    }
  });
}
