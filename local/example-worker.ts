import { createSignedFetch } from "../client/signed-fetch";
import type { LocalCredential } from "./local-credentials";

/**
 * The example worker the local runtime starts: it leases runs of type `example.log` over the
 * same signed HTTP lease protocol a real worker uses, logs each run it executes, and completes
 * it with its fence. It stops taking work when its signal aborts.
 */
export const EXAMPLE_TYPE = "example.log";

interface LeaseJson {
  runId: string;
  runKey: string;
  fence: number;
  attempt: number;
  scheduledFor: string;
  payload: unknown;
}

export async function runExampleWorker(
  baseUrl: string,
  credential: LocalCredential,
  region: string,
  signal: AbortSignal,
  print = console.log,
): Promise<void> {
  const call = createSignedFetch({ endpoint: baseUrl, region, credentials: credential });
  const post = async (path: string, body: unknown) => {
    const response = await call("POST", path, { body, signal });
    if (response.status !== 200)
      throw new Error(`${path}: HTTP ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  };

  while (!signal.aborted) {
    try {
      const leases = (await post("/internal/leases", {
        workerId: "example-worker",
        types: [EXAMPLE_TYPE],
        max: 10,
        waitSeconds: 1,
      })) as LeaseJson[];
      for (const lease of leases) {
        const lateMs = Date.now() - Date.parse(lease.scheduledFor);
        print(
          `[example-worker] ran ${lease.runKey} (attempt ${lease.attempt}, fence ${lease.fence}, ` +
            `${lateMs} ms after its time) payload=${JSON.stringify(lease.payload)}`,
        );
        await post(`/internal/leases/${lease.runId}/complete`, { fence: lease.fence, result: "succeeded" });
      }
    } catch (error) {
      if (signal.aborted) return;
      print(`[example-worker] ${(error as Error).message}; retrying in 1 s`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
