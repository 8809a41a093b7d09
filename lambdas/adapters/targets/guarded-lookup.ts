import { type LookupAddress, type LookupOptions, lookup } from "node:dns";
import { isPublicAddress } from "../../core/destination-rules";

/** What a refused destination's error says (the delivery fails for good with it). */
export const PRIVATE_DESTINATION = "EJOBSCHED_PRIVATE_DESTINATION";

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that refuses a name resolving to a loopback, private,
 * link-local or metadata address: the check is on the very addresses the socket then connects
 * to, so a name that changes its answer between a check and the connect (DNS rebinding) is
 * refused too. Every address of the answer must be public, whichever one Node picks.
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused) {
      const problem = Object.assign(
        new Error(`${hostname} resolves to ${refused.address}, a loopback, private or metadata address`),
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
