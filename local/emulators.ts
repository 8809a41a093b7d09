import type { AddressInfo } from "node:net";
import dynalite from "dynalite";
import { buildApp } from "fauxqs";
import { assertDynaliteIndexKeysWhole } from "./dynalite-index-keys";
import { closeDynaliteIterators } from "./dynalite-iterators";
import { indexFormatIsCurrent, rebuildIndexes } from "./rebuild-indexes";

/**
 * The local AWS stand-ins, started in this process on loopback ports: dynalite for DynamoDB
 * (on disk for the local runtime, in memory for tests; after an unclean stop its indexes are
 * rebuilt from the items, see rebuild-indexes.ts; its index keys patched, see
 * dynalite-index-keys.ts) and fauxqs for SQS (memory only; it keeps nothing
 * across restarts, which the repair pass makes up for).
 */
export interface Emulator {
  readonly endpoint: string;
  close(): Promise<void>;
}

const LOOPBACK = "127.0.0.1";

export async function startDynamo(
  options: { path?: string; rebuildIndexes?: boolean } = {},
): Promise<Emulator> {
  assertDynaliteIndexKeysWhole();
  closeDynaliteIterators();
  // A runtime killed mid-write can leave dynalite's indexes out of step with the items; a
  // folder from before the index-key patch has entries under the old keys.
  if (options.path && (options.rebuildIndexes || !indexFormatIsCurrent(options.path)))
    await rebuildIndexes(options.path);
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, path: options.path });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, LOOPBACK, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${LOOPBACK}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function startSqs(options: { port?: number } = {}): Promise<Emulator> {
  // buildApp + our own listen, rather than startFauxqs, which binds every interface.
  const app = buildApp({ logger: false });
  await app.listen({ port: options.port ?? 0, host: LOOPBACK });
  const address = app.server.address() as AddressInfo;
  return { endpoint: `http://${LOOPBACK}:${address.port}`, close: () => app.close() };
}
