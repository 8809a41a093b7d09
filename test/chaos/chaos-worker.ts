import { appendFileSync } from "node:fs";
import { createWorker, PermanentError } from "@jobsched/worker";
import { loadLocalCredentials } from "../../local/local-credentials";
import { CHAOS_TYPE, type ChaosPayload, type WorkerEvent, workMs } from "./chaos-events";

/**
 * One worker process of the crash-loop test: `tsx test/chaos/chaos-worker.ts <api url>
 * <worker id> <log file> <access key>`. It signs with the dev worker credential of that access
 * key (bound to one tenant, or the pool), executes `chaos.work` runs as their payload says
 * (sleep, fail the first n attempts, fail for good) and appends one JSON line per execution
 * start and per completion outcome. Lines are written synchronously so a SIGKILL loses none.
 * A handler stops when its lease is lost (the SDK's signal: a heartbeat got 409, as when a
 * newer run revokes it under cancel-previous), as a well-behaved one does.
 */
const [url, workerId, logFile, accessKeyId] = process.argv.slice(2);
if (!url || !workerId || !logFile || !accessKeyId) {
  console.error("usage: chaos-worker <api url> <worker id> <log file> <access key>");
  process.exit(2);
}
const record = (event: WorkerEvent) => appendFileSync(logFile, `${JSON.stringify(event)}\n`);
const credentials = loadLocalCredentials();
const credential = credentials.byAccessKey.get(accessKeyId);
if (credential?.kind !== "worker") {
  console.error(`chaos-worker: ${accessKeyId} is not a dev worker credential`);
  process.exit(2);
}

const worker = createWorker({
  endpoint: url,
  region: credentials.region,
  credentials: credential,
  types: [CHAOS_TYPE],
  concurrency: 20,
  workerId,
  log: () => undefined,
  handler: async (run, { signal }) => {
    record({
      e: "start",
      runId: run.runId,
      fence: run.fence,
      attempt: run.attempt,
      worker: workerId,
      at: Date.now(),
    });
    const payload = run.payload as ChaosPayload;
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(done, workMs(payload, Date.now()));
      signal.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          fail(new Error("chaos: lease lost, stopping"));
        },
        { once: true },
      );
    });
    if (payload.permanent) throw new PermanentError("chaos: permanent failure");
    if (run.attempt <= payload.failAttempts) throw new Error(`chaos: attempt ${run.attempt} fails`);
  },
  onCompleted: (run, report) =>
    record({
      e: "done",
      runId: run.runId,
      fence: run.fence,
      worker: workerId,
      result: report.result,
      status: report.status,
      sentAt: report.sentAt,
      at: Date.now(),
    }),
});
await worker.done;
