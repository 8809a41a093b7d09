/**
 * bench-dispatcher-memory: how much memory the dispatcher Lambda uses, on Node.js 22 with the
 * bundle `cdk deploy` uploads (cdk.out), so that its memory size (FUNCTION_MEMORY_MB.dispatcher)
 * rests on a figure (decision 0055). The dispatcher waits on the network for most of its billed
 * time, so its memory size is most of what a push run's Lambda time costs.
 *
 *   npx tsx scripts/bench-dispatcher-memory.ts [--sizes 256,192,160,128] [--per-size 2] [--jobs 800]
 *       [--large-kb 200] [--large-every 10] [--headroom 30] [--synth]
 *
 * Push jobs of one tenant on a webhook receiver here: a tenth retried once, a twentieth
 * answering after 7 s (the push mix's answers, bench-cost), every `--large-every`th with a
 * payload of `--large-kb` (the limit is 256 KB), a third due in one second (full batches).
 * For each memory size, `--per-size` Node.js 22 processes each play one dispatcher instance,
 * started with the heap flags Lambda's Node.js bootstrap derives from the size (new space a
 * tenth, old space the rest); each takes one batch of up to 10 at a time from the push queue,
 * as the event source hands them over (scripts/bundles/dispatcher-memory.mjs), and logs at
 * Powertools' default level, as the stack leaves it.
 *
 * Prints, by size, each instance's resident memory before and after the bundle's import and at
 * its peak (sampled every 10 ms and the kernel's maxRSS), and the CPU time spent inside the
 * handler a record (this machine's core; a Lambda function of M MB has M/1,769 of a vCPU). Lambda
 * reports "Max Memory Used" for the whole runtime process; its runtime client, absent here,
 * adds a few MB, which the headroom covers. The verdict: every run delivered once, and the
 * configured size's peak leaves `--headroom` percent free; the smallest size that does is printed.
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
import { oneOffJob, putJobs, startBenchStack, tickAhead } from "./bench-support";
import { type Check, exactly, holds, reportVerdict } from "./bench-verdict";
import { BUNDLE_BASE_ENV, node22, placeBundles, ROOT, synthesize } from "./bundles/bundle-support";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "800" },
    sizes: { type: "string", default: "256,192,160,128" },
    "per-size": { type: "string", default: "2" },
    "large-kb": { type: "string", default: "200" },
    "large-every": { type: "string", default: "10" },
    headroom: { type: "string", default: "30" },
    synth: { type: "boolean" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(
    "usage: npx tsx scripts/bench-dispatcher-memory.ts [--sizes 256,192,160,128] [--per-size 2] [--jobs 800] [--large-kb 200] [--large-every 10] [--headroom 30] [--synth]",
  );
  process.exit(0);
}
const jobCount = Number(values.jobs);
const sizes = values.sizes.split(",").map(Number);
const perSize = Number(values["per-size"]);
const largeKb = Number(values["large-kb"]);
const largeEvery = Number(values["large-every"]);
if (!sizes.every((size) => Number.isInteger(size) && size >= 128) || !(largeKb >= 0 && largeKb <= 255)) {
  console.error("--sizes: whole MB, at least 128 each; --large-kb: 0 to 255 (the payload limit is 256 KB)");
  process.exit(2);
}
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
// The filler and the mode's few bytes stay under the 256 KB payload limit.
const large = "x".repeat(largeKb * 1024);
const jobs: Job[] = Array.from({ length: jobCount }, (_, i) => {
  const mode = i % 20 === 7 ? "slow" : i % 10 === 3 ? "retry-once" : "ok";
  const dueAt = i % 3 === 0 ? denseSecond : firstDue + (i % 40) * 1000;
  return {
    ...oneOffJob(dueAt, now, "@https", TENANT),
    target: { kind: "https", url: `${receiver.url}/hook`, timeoutSeconds: 10, concurrency: 10 },
    payload: { mode, ...(largeKb > 0 && i % largeEvery === largeEvery - 1 ? { filler: large } : {}) },
  };
});
await putJobs(createDocumentClient(config), config.tableName, jobs);
console.log(
  `${jobCount} push jobs due from ${new Date(firstDue).toISOString()} over 40 s (a third in one second), one in ${largeEvery} with a ${largeKb} KB payload; ${perSize} dispatcher instances on Node.js 22 for each of ${sizes.join(", ")} MB`,
);

interface InstanceFigures {
  readonly node: string;
  readonly memoryMb: number;
  readonly rssBeforeImportMb: number;
  readonly rssAfterImportMb: number;
  readonly importCpuMs: number;
  readonly peakRssMb: number;
  readonly peakHeapMb: number;
  readonly invocations: number;
  readonly records: number;
  readonly handlerCpuMs: number;
  readonly firstInvocationCpuMs: number;
  readonly handlerWallMs: number;
  readonly deleteFailures: number;
}

/** Lambda's Node.js bootstrap: new space a tenth of the size (semi-space half of it), old space the rest. */
const heapFlags = (memoryMb: number) => {
  const newSpace = Math.floor(memoryMb / 10);
  return [`--max-semi-space-size=${Math.floor(newSpace / 2)}`, `--max-old-space-size=${memoryMb - newSpace}`];
};

const children = sizes.flatMap((memoryMb) =>
  Array.from({ length: perSize }, () => {
    const child = spawn(
      binary,
      [...heapFlags(memoryMb), join(ROOT, "scripts/bundles/dispatcher-memory.mjs")],
      {
        cwd: ROOT,
        stdio: ["pipe", "pipe", "inherit"],
        env: {
          ...BUNDLE_BASE_ENV,
          // The stack leaves Powertools at its default level: the dispatcher logs each invocation.
          POWERTOOLS_LOG_LEVEL: "INFO",
          AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memoryMb),
          TABLE_NAME: config.tableName,
          RUN_QUEUE_URL: config.runQueueUrl,
          SWEEP_QUEUE_URL: config.sweepQueueUrl,
          PUSH_QUEUE_URL: config.pushQueueUrl,
          DYNAMODB_ENDPOINT: config.dynamodbEndpoint ?? "",
          SQS_ENDPOINT: config.sqsEndpoint ?? "",
          ...settingsEnvironment(config.settings),
          JOBSCHED_DISPATCHER_BUNDLE: placed.dispatcher ?? "",
        },
      },
    );
    let tail = "";
    child.stdout.on("data", (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-100_000);
    });
    const figures = new Promise<InstanceFigures | Error>((done) => {
      child.on("exit", (code, signal) => {
        const line = tail.split("\n").find((l) => l.startsWith("FIGURES "));
        done(
          code === 0 && line
            ? (JSON.parse(line.slice("FIGURES ".length)) as InstanceFigures)
            : new Error(`a ${memoryMb} MB instance exited (${code ?? signal}): ${tail.slice(-2_000)}`),
        );
      });
    });
    return { child, figures };
  }),
);

let results: (InstanceFigures | Error)[] = [];
try {
  await tickAhead(deps, firstDue + 39_000);
  const deadline = firstDue + 120_000;
  while (arrived.size < jobCount && Date.now() < deadline) await new Promise((done) => setTimeout(done, 200));
  await new Promise((done) => setTimeout(done, 2_000));
} finally {
  for (const { child } of children) {
    child.kill("SIGTERM");
    child.stdin.end();
  }
  results = await Promise.all(children.map(({ figures }) => figures));
  receiver.close();
  await stack.close();
  rmSync(scratch, { recursive: true, force: true });
}

const f1 = (n: number) => n.toFixed(1);
const failures = results.filter((r): r is Error => r instanceof Error);
for (const failure of failures) console.error(failure.message);
const figures = results.filter((r): r is InstanceFigures => !(r instanceof Error));
const peakOf = new Map<number, number>();
for (const size of sizes) {
  const mine = figures.filter((f) => f.memoryMb === size);
  for (const f of mine) {
    console.log(
      `${size} MB instance (${f.node}): rss ${f1(f.rssBeforeImportMb)} MB before the bundle, ${f1(f.rssAfterImportMb)} MB after it (import CPU ${f1(f.importCpuMs)} ms); peak ${f1(f.peakRssMb)} MB (heap ${f1(f.peakHeapMb)} MB); ${f.invocations} invocations, ${f.records} records; CPU in the handler ${f1(f.handlerCpuMs / Math.max(1, f.records))} ms a record (first invocation ${f1(f.firstInvocationCpuMs)} ms), wall ${f1(f.handlerWallMs / Math.max(1, f.records))} ms a record`,
    );
  }
  if (mine.length > 0) peakOf.set(size, Math.max(...mine.map((f) => f.peakRssMb)));
}
const records = figures.reduce((sum, f) => sum + f.records, 0);
const cpuPerRecord = figures.reduce((sum, f) => sum + f.handlerCpuMs, 0) / Math.max(1, records);
console.log(
  `CPU in the handler: ${f1(cpuPerRecord)} ms a record over ${records} records handed over (a run handed back and taken again counts each time) for ${jobCount} runs, on this machine's core`,
);
const fits = (size: number) => {
  const peak = peakOf.get(size);
  return peak !== undefined && peak <= size * (1 - headroom);
};
for (const size of sizes) {
  const peak = peakOf.get(size);
  console.log(
    `  ${size} MB: peak ${peak === undefined ? "-" : f1(peak)} MB, ${fits(size) ? "fits" : "does not fit"} with ${values.headroom}% kept free (at most ${f1(size * (1 - headroom))} MB); the handler's CPU would take about ${f1((cpuPerRecord * 1769) / size)} ms a record there`,
  );
}
const smallest = sizes.filter(fits).sort((a, b) => a - b)[0];
console.log(`smallest size measured that fits: ${smallest === undefined ? "none" : `${smallest} MB`}`);
const duplicates = [...arrived.values()].reduce((sum, n) => sum + n - 1, 0);
const configured = FUNCTION_MEMORY_MB.dispatcher;
const checks: Check[] = [
  exactly("instances that exited with their figures", figures.length, children.length),
  exactly("runs delivered", arrived.size, jobCount),
  exactly("runs delivered twice", duplicates, 0),
  holds(
    `the configured ${configured} MB ${peakOf.has(configured) ? `(peak ${f1(peakOf.get(configured) ?? 0)} MB)` : "(not measured: add it to --sizes)"} keeps ${values.headroom}% free`,
    fits(configured),
  ),
];
process.exit(reportVerdict(checks));
