/**
 * bench-dispatcher-memory: how much memory the dispatcher Lambda uses, on Node.js 22 with the
 * bundle `cdk deploy` uploads (cdk.out), so that its memory size (FUNCTION_MEMORY_MB.dispatcher)
 * rests on a figure (decision 0055). The dispatcher waits on the network for most of its billed
 * time, so its memory size is most of what a push run's Lambda time costs.
 *
 *   npx tsx scripts/bench-dispatcher-memory.ts [--jobs 600] [--instances 4] [--large-kb 200] [--synth]
 *
 * Push jobs on a webhook receiver here, in the push mix's shape (bench-cost): a tenth retried
 * once, a twentieth answering after 7 s; a tenth carry a payload of `--large-kb` (the limit is
 * 256 KB), and a third are due in one second (full batches of 10). `--instances` Node.js 22
 * processes each play one dispatcher instance: one invocation at a time, batches of up to 10
 * from the push queue as the event source hands them over (scripts/bundles/dispatcher-memory.mjs).
 *
 * Prints each instance's resident memory after the bundle's import (a cold start's) and at its
 * peak (sampled every 10 ms, and the kernel's maxRSS), its CPU time a record, and the verdict for
 * the memory size: the peak must leave at least `--headroom` (default 30%) of it free. Lambda
 * reports "Max Memory Used" for the whole runtime process; its runtime client, absent here,
 * adds a few MB (counted in the headroom). Exits non-zero if a run did not arrive, or the
 * configured size leaves less than the headroom.
 */
import "../local/runtime-env";
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createDocumentClient } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import type { Job } from "../lambdas/core/job";
import { FUNCTION_MEMORY_MB } from "../lambdas/definitions/functions";
import { CLOUD_SETTINGS, LOCAL_SETTINGS, settingsEnvironment } from "../lambdas/definitions/settings";
import { startWebhookReceiver } from "../test/support/webhook-receiver";
import { storeWebhookSecret } from "../test/support/webhook-secret";
import { oneOffJob, percentile, putJobs, startBenchStack, tickAhead } from "./bench-support";
import { atMost, type Check, exactly, reportVerdict } from "./bench-verdict";
import { BUNDLE_BASE_ENV, node22, placeBundles, ROOT, synthesize } from "./bundles/bundle-support";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "600" },
    instances: { type: "string", default: "4" },
    "large-kb": { type: "string", default: "200" },
    headroom: { type: "string", default: "30" },
    synth: { type: "boolean" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(
    "usage: npx tsx scripts/bench-dispatcher-memory.ts [--jobs 600] [--instances 4] [--large-kb 200] [--headroom 30] [--synth]",
  );
  process.exit(0);
}
const jobCount = Number(values.jobs);
const instances = Number(values.instances);
const largeKb = Number(values["large-kb"]);
const headroom = Number(values.headroom) / 100;
const TENANT = "bench-tenant";

if (values.synth) synthesize();
const binary = node22();
const { scratch, placed } = placeBundles(["dispatcher"]);

const stack = await startBenchStack("bench-dispatcher-memory", {
  settings: { ...CLOUD_SETTINGS, leasesPerSecond: LOCAL_SETTINGS.leasesPerSecond, allowPrivateTargets: 1 },
});
const { config } = stack;
const deps = createSchedulerDeps(config);
await storeWebhookSecret(
  deps.webhookSecrets,
  TENANT,
  `whsec_${Buffer.from("memory-bench-secret-32-bytes-ok!").toString("base64")}`,
);

// The push mix's answers: a tenth fail their first attempt, a twentieth take 7 s.
const arrived = new Map<string, number>();
const receiver = await startWebhookReceiver(async ({ body }) => {
  const envelope = JSON.parse(body) as { runKey: string; attempt: number; payload: { mode: string } };
  if (envelope.payload.mode === "retry-once" && envelope.attempt === 1) return 503;
  if (envelope.payload.mode === "slow") await new Promise((done) => setTimeout(done, 7_000));
  arrived.set(envelope.runKey, (arrived.get(envelope.runKey) ?? 0) + 1);
  return 204;
});

const now = Date.now();
const firstDue = Math.ceil((now + 40_000) / 1000) * 1000;
const denseSecond = firstDue + 20_000;
const large = "x".repeat(largeKb * 1024);
const jobs: Job[] = Array.from({ length: jobCount }, (_, i) => {
  const mode = i % 20 === 7 ? "slow" : i % 10 === 3 ? "retry-once" : "ok";
  const dueAt = i % 3 === 0 ? denseSecond : firstDue + (i % 40) * 1000;
  return {
    ...oneOffJob(dueAt, now, "@https", TENANT),
    target: { kind: "https", url: `${receiver.url}/hook`, timeoutSeconds: 10, concurrency: 10 },
    payload: { mode, ...(i % 10 === 5 ? { filler: large } : {}) },
  };
});
await putJobs(createDocumentClient(config), config.tableName, jobs);
console.log(
  `${jobCount} push jobs due from ${new Date(firstDue).toISOString()} over 40 s (a third in one second), a tenth with a ${largeKb} KB payload; ${instances} dispatcher instances on Node.js 22`,
);

interface InstanceFigures {
  readonly node: string;
  readonly rssBeforeImportMb: number;
  readonly rssAfterInitMb: number;
  readonly initCpuMs: number;
  readonly peakRssMb: number;
  readonly maxRssMb: number;
  readonly peakHeapMb: number;
  readonly cpuMs: number;
  readonly invocations: number;
  readonly records: number;
  readonly busyMs: number;
}

const children = Array.from({ length: instances }, () => {
  const child = spawn(binary, [join(ROOT, "scripts/bundles/dispatcher-memory.mjs")], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      ...BUNDLE_BASE_ENV,
      TABLE_NAME: config.tableName,
      RUN_QUEUE_URL: config.runQueueUrl,
      SWEEP_QUEUE_URL: config.sweepQueueUrl,
      PUSH_QUEUE_URL: config.pushQueueUrl,
      DYNAMODB_ENDPOINT: config.dynamodbEndpoint ?? "",
      SQS_ENDPOINT: config.sqsEndpoint ?? "",
      ...settingsEnvironment(config.settings),
      JOBSCHED_DISPATCHER_BUNDLE: placed.dispatcher ?? "",
      JOBSCHED_MEMORY_MB: String(FUNCTION_MEMORY_MB.dispatcher),
    },
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const figures = new Promise<InstanceFigures>((done, fail) => {
    child.on("exit", (code) => {
      const line = output.trim().split("\n").at(-1) ?? "";
      if (code !== 0 || !line.startsWith("{")) fail(new Error(`an instance exited ${code}: ${output}`));
      else done(JSON.parse(line) as InstanceFigures);
    });
  });
  return { child, figures };
});

for (const due of [firstDue + 39_000]) await tickAhead(deps, due);
const deadline = firstDue + 120_000;
while (arrived.size < jobCount && Date.now() < deadline) await new Promise((done) => setTimeout(done, 200));
await new Promise((done) => setTimeout(done, 2_000));
for (const { child } of children) child.kill("SIGTERM");
const figures = await Promise.all(children.map(({ figures }) => figures));
receiver.close();
await stack.close();
rmSync(scratch, { recursive: true, force: true });

const f1 = (n: number) => n.toFixed(1);
for (const [i, f] of figures.entries()) {
  console.log(
    `instance ${i + 1} (${f.node}): rss ${f1(f.rssBeforeImportMb)} MB before the bundle, ${f1(f.rssAfterInitMb)} MB after it (init CPU ${f1(f.initCpuMs)} ms); peak ${f1(f.peakRssMb)} MB (kernel maxRSS ${f1(f.maxRssMb)} MB, heap ${f1(f.peakHeapMb)} MB); ${f.invocations} invocations, ${f.records} records, CPU ${f1(f.cpuMs / Math.max(1, f.records))} ms a record`,
  );
}
const peak = Math.max(...figures.map((f) => Math.max(f.peakRssMb, f.maxRssMb)));
const records = figures.reduce((sum, f) => sum + f.records, 0);
const cpuPerRecord = figures.reduce((sum, f) => sum + f.cpuMs, 0) / Math.max(1, records);
const sorted = [...figures.map((f) => f.peakRssMb)].sort((a, b) => a - b);
console.log(
  `peak over the instances: ${f1(peak)} MB (median instance ${f1(percentile(sorted, 50))} MB); CPU ${f1(cpuPerRecord)} ms a record on this machine's core (a Lambda of M MB has M/1769 of a vCPU)`,
);
const needed = peak / (1 - headroom);
for (const size of [128, 256, 512]) {
  console.log(
    `  ${size} MB: ${peak <= size * (1 - headroom) ? "fits" : "does not fit"} with ${values.headroom}% kept free (needs ${f1(needed)} MB); CPU a record about ${f1((cpuPerRecord * 1769) / size)} ms`,
  );
}
const duplicates = [...arrived.values()].reduce((sum, n) => sum + n - 1, 0);
const checks: Check[] = [
  exactly("runs delivered", arrived.size, jobCount),
  exactly("runs delivered twice", duplicates, 0),
  atMost(
    `peak resident memory, MB (${FUNCTION_MEMORY_MB.dispatcher} MB configured, ${values.headroom}% kept free)`,
    Math.ceil(peak),
    Math.floor(FUNCTION_MEMORY_MB.dispatcher * (1 - headroom)),
  ),
];
process.exit(reportVerdict(checks));
