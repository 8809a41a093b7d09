import { createWorker, PermanentError } from "@jobsched/worker";
import type { LocalCredential } from "./local-credentials";

/**
 * The example worker the local runtime starts: the worker SDK (packages/worker, @jobsched/worker) leasing runs
 * of type `example.log` over the signed lease protocol, logging each run it executes. A payload
 * of `{"fail": "..."}` makes it fail (retryable), `{"fail": "...", "permanent": true}` fail for
 * good, to try retries and dead letters by hand. It stops when its signal aborts.
 */
export const EXAMPLE_TYPE = "example.log";

export async function runExampleWorker(
  baseUrl: string,
  credential: LocalCredential,
  region: string,
  signal: AbortSignal,
  print = console.log,
): Promise<void> {
  const worker = createWorker({
    endpoint: baseUrl,
    region,
    credentials: credential,
    types: [EXAMPLE_TYPE],
    concurrency: 10,
    workerId: "example-worker",
    stopOnSignals: false,
    log: print,
    handler: async (run) => {
      const lateMs = Date.now() - Date.parse(run.scheduledFor);
      print(
        `[example-worker] ran ${run.runKey} (attempt ${run.attempt}, fence ${run.fence}, ` +
          `${lateMs} ms after its time) payload=${JSON.stringify(run.payload)}`,
      );
      const failure = failureOf(run.payload);
      if (failure) throw failure;
    },
  });
  signal.addEventListener("abort", () => void worker.stop(), { once: true });
  await worker.done;
}

function failureOf(payload: unknown): Error | undefined {
  if (typeof payload !== "object" || payload === null || !("fail" in payload)) return undefined;
  const message = String(payload.fail);
  if ("permanent" in payload && payload.permanent === true) return new PermanentError(message);
  return new Error(message);
}
