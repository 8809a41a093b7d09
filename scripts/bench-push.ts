/**
 * bench-push: `--jobs` webhook runs due in the same second, pushed by the dispatcher (issue 17).
 * The local stack (dynalite, fauxqs, the real use cases, the real dispatcher handler behind a
 * local event source that scales as Lambda's does) sweeps them as the first tick that sees them
 * would, and the dispatcher POSTs each to a receiver on 127.0.0.1 that checks every signature
 * with the `standardwebhooks` library and notes when each run arrived.
 *
 *   npm run bench:push -- [--jobs 1000] [--ahead 60] [--concurrency 10] [--receiver-ms 0] [--p99-ms 1500]
 *
 * Prints lateness at the receiver (arrived - scheduled for) p50/p95/p99/max, duplicates, bad
 * signatures and the drain time. Exits non-zero if a run did not arrive exactly once with a good
 * signature, or p99 is over `--p99-ms` (default 1,500 ms: issue 17's target).
 */
import "../local/runtime-env";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { Webhook } from "standardwebhooks";
import { createDocumentClient, createSqsClient } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import type { Target } from "../lambdas/core/target";
import { CLOUD_SETTINGS, LOCAL_SETTINGS } from "../lambdas/definitions/settings";
import { startLocalDispatcher } from "../local/dispatcher";
import { LocalFunctions } from "../local/local-functions";
import { startWebhookReceiver } from "../test/support/webhook-receiver";
import { oneOffJob, percentile, putJobs, startBenchStack, tickAhead } from "./bench-support";
import { atMost, exactly, reportVerdict } from "./bench-verdict";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "1000" },
    ahead: { type: "string", default: "60" },
    concurrency: { type: "string", default: "10" },
    "receiver-ms": { type: "string", default: "0" },
    "p99-ms": { type: "string", default: "1500" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(
    "usage: npm run bench:push -- [--jobs 1000] [--ahead 60] [--concurrency 10] [--receiver-ms 0] [--p99-ms 1500]",
  );
  process.exit(0);
}
const jobCount = Number(values.jobs);
const receiverMs = Number(values["receiver-ms"]);
const TENANT = "bench-tenant";
const SECRET = `whsec_${Buffer.from("bench-push-secret-of-32-bytes!!!").toString("base64")}`;

// The receiver: every delivery's signature checked by an independent implementation.
const verifier = new Webhook(SECRET);
const arrivals = new Map<string, number[]>();
let badSignatures = 0;
const receiver = await startWebhookReceiver(async ({ body, headers, at }) => {
  try {
    verifier.verify(body, headers);
  } catch {
    badSignatures++;
  }
  const { runKey } = JSON.parse(body) as { runKey: string };
  arrivals.set(runKey, [...(arrivals.get(runKey) ?? []), at]);
  await new Promise((done) => setTimeout(done, receiverMs));
  return 204;
});
const url = `${receiver.url}/hook`;

// Cloud timings, with the lease rate this machine grants and private targets allowed (the
// receiver is on loopback).
const stack = await startBenchStack("bench-push", {
  settings: { ...CLOUD_SETTINGS, leasesPerSecond: LOCAL_SETTINGS.leasesPerSecond, allowPrivateTargets: 1 },
});
const { config } = stack;
const deps = createSchedulerDeps(config);
await deps.webhookSecrets.put(TENANT, { current: SECRET, createdAt: Date.now() }, undefined);
const dispatcher = startLocalDispatcher(
  // The dispatcher has its own clients, as its Lambda would.
  createSchedulerDeps(config),
  createSqsClient(config),
  config.pushQueueUrl,
  new LocalFunctions(new Map()),
  config.sqsEndpoint ?? "",
);

const dueAt = Math.ceil((Date.now() + Number(values.ahead) * 1000) / 1000) * 1000;
const target: Target = { kind: "https", url, timeoutSeconds: 10, concurrency: Number(values.concurrency) };
await putJobs(
  createDocumentClient(config),
  config.tableName,
  Array.from({ length: jobCount }, () => ({ ...oneOffJob(dueAt, Date.now(), "@https", TENANT), target })),
);
console.log(`${jobCount} webhook jobs due at ${new Date(dueAt).toISOString()}`);
await tickAhead(deps, dueAt);

const deadline = dueAt + 60_000;
while (arrivals.size < jobCount && Date.now() < deadline) await new Promise((d) => setTimeout(d, 100));
const drainedAt = Date.now();
// A little longer, to see a duplicate that would come late.
await new Promise((d) => setTimeout(d, 3_000));
await dispatcher.stop();
receiver.close();
// When each run's lease was granted, from the run records (a scan: a bench's table is small).
const leasedAhead: number[] = [];
for (let start: Record<string, unknown> | undefined; ; ) {
  const page = await createDocumentClient(config).send(
    new ScanCommand({ TableName: config.tableName, ExclusiveStartKey: start }),
  );
  for (const item of page.Items ?? []) {
    if (typeof item.startedAt === "number" && typeof item.scheduledFor === "number") {
      leasedAhead.push(item.scheduledFor - item.startedAt);
    }
  }
  start = page.LastEvaluatedKey;
  if (!start) break;
}
await stack.close();

const lateness = [...arrivals.values()].map((times) => (times[0] ?? 0) - dueAt).sort((a, b) => a - b);
const duplicates = [...arrivals.values()].reduce((sum, times) => sum + times.length - 1, 0);
const [p50, p95, p99] = [50, 95, 99].map((p) => percentile(lateness, p));
console.log(`machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores`);
console.log(
  `received: ${arrivals.size}/${jobCount}, duplicates ${duplicates}, bad signatures ${badSignatures}, target concurrency ${target.concurrency}`,
);
console.log(
  `lateness at the receiver ms: p50 ${p50} p95 ${p95} p99 ${p99} max ${lateness.at(-1)} (min ${lateness[0]})`,
);
console.log(`drained ${((drainedAt - dueAt) / 1000).toFixed(1)} s after the second`);
const ahead = leasedAhead.sort((a, b) => a - b);
console.log(
  `leased ahead of the second ms: min ${ahead[0]} p50 ${percentile(ahead, 50)} max ${ahead.at(-1)} (negative: after it)`,
);
process.exit(
  reportVerdict([
    exactly("runs received", arrivals.size, jobCount),
    exactly("duplicate deliveries", duplicates, 0),
    exactly("bad signatures", badSignatures, 0),
    atMost("lateness p99 ms at the receiver", p99 ?? Number.NaN, Number(values["p99-ms"])),
  ]),
);
