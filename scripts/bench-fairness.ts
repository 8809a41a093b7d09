/**
 * bench-fairness: tenant A with 5,000 runs and tenant B with 50, all due at the same second,
 * one job type, 4 workers. Runs travel in per-(tenant, type) lanes and every lease request
 * takes a fair share of each lane, so B's runs should all start on time while A's backlog
 * drains (issue 14: B's p99 at most 100 ms). Everything runs on the local stack, both emulators in
 * processes of their own; jobs are written straight to the table, swept by the first tick that sees them.
 *
 *   npx tsx scripts/bench-fairness.ts [--a 5000] [--b 50] [--workers 4] [--max 50] [--requests 2]
 *                                     [--concurrency 10] [--prefetch 90] [--work-ms 20] [--trace]
 *
 * Each worker runs as the SDK does: its hold executing --concurrency runs at once (10), --work-ms
 * each, completions batched; room for --prefetch more in hand (90), of which runs held more than
 * 5 s ahead of their time, with what requests out ask for, take at most half the room in hand
 * and at most --prefetch (packages/worker/src/lease-room.ts);
 * --requests pollers asking for up to --max while there is room (a second's pause after an
 * answer that was not full). Lateness
 * is when the worker could start a
 * run: the later of its hand-over and its startAt (the SDK starts a held run at startAt when it
 * has a free slot: how many slots it has is the worker's capacity, not the scheduler's
 * fairness, which this measures). Prints both tenants' lateness percentiles and the drain time;
 * exits non-zero if B's p99 is over 100 ms or any run was not leased exactly once.
 */
import "../local/runtime-env";
import { parseArgs } from "node:util";
import { createDocumentClient } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import { MAX_LEAD_SECONDS } from "../lambdas/core/delivery";
import { type Lease, leaseRuns } from "../lambdas/core/use-cases/lease-runs";
import { AHEAD_MS, leaseRoom } from "../packages/worker/src/lease-room";
import { RunHold } from "../packages/worker/src/run-hold";
import {
  completionBatcher,
  oneOffJob,
  percentile,
  putJobs,
  startBenchStack,
  tickAhead,
} from "./bench-support";
import { atMost, exactly, reportVerdict } from "./bench-verdict";

/** The worker the tests lease as: it serves the tenants these jobs belong to. */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["tenant-a", "tenant-b"] };

const { values } = parseArgs({
  options: {
    a: { type: "string", default: "5000" },
    b: { type: "string", default: "50" },
    workers: { type: "string", default: "4" },
    max: { type: "string", default: "50" },
    "work-ms": { type: "string", default: "20" },
    requests: { type: "string", default: "2" },
    concurrency: { type: "string", default: "10" },
    prefetch: { type: "string", default: "90" },
    trace: { type: "boolean" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(
    "usage: npx tsx scripts/bench-fairness.ts [--a 5000] [--b 50] [--workers 4] [--max 50] [--requests 2] [--concurrency 10] [--prefetch 90] [--work-ms 20] [--trace]",
  );
  process.exit(0);
}
const counts = { a: Number(values.a), b: Number(values.b) };
const workerCount = Number(values.workers);
const leaseMax = Number(values.max);
const workMs = Number(values["work-ms"]);
// Pollers per worker (the SDK keeps one per 100 places in hand).
const requestsPerWorker = Number(values.requests);
const concurrency = Number(values.concurrency);
const prefetch = Number(values.prefetch);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, Math.max(0, ms)));

const stack = await startBenchStack("bench-fairness");
const { config } = stack;
const deps = createSchedulerDeps(config);
const completionDeps = createSchedulerDeps(config); // completions are other Lambda instances
const db = createDocumentClient(config);

// Everything due on one whole second, far enough ahead for the first tick that sees it.
const dueAt = Math.ceil((Date.now() + 95_000) / 1000) * 1000;
const now = Date.now();
const jobs = [
  ...Array.from({ length: counts.a }, () => oneOffJob(dueAt, now, "fair", "tenant-a")),
  ...Array.from({ length: counts.b }, () => oneOffJob(dueAt, now, "fair", "tenant-b")),
];
await putJobs(db, config.tableName, jobs);
const tenantOf = new Map(jobs.map((job) => [job.jobId, job.tenant === "tenant-a" ? "a" : "b"] as const));
console.log(
  `${counts.a} runs for tenant A, ${counts.b} for tenant B, due at ${new Date(dueAt).toISOString()}`,
);

await tickAhead(deps, dueAt);
await sleep(dueAt - (MAX_LEAD_SECONDS + 2) * 1000 - Date.now());
const lateness = { a: [] as number[], b: [] as number[] };
const leased = new Set<string>();
let duplicates = 0;
let lastDone = 0;
const total = counts.a + counts.b;
// Each worker as the SDK runs one: its hold (`concurrency` runs executed at once, work-ms each,
// completed in batches), room for `concurrency + prefetch` runs in hand as the SDK counts it
// (packages/worker/src/lease-room.ts), and pollers that keep asking while there is room, pausing a second
// after an answer that was not full (packages/worker/src/worker.ts).
const workers = Array.from({ length: workerCount }, () => {
  const complete = completionBatcher(completionDeps, worker, () => {
    lastDone = Date.now();
  });
  const hold = new RunHold<Lease>({
    concurrency,
    start: async (lease) => {
      await sleep(workMs);
      await complete({ runId: lease.runId, fence: lease.fence, final: lease.final, result: "succeeded" });
    },
    giveUp: (lease) => console.error(`given up: ${lease.runKey}`),
  });
  return { hold, asking: 0 };
});
await Promise.all(
  Array.from({ length: workerCount * requestsPerWorker }, async (_, i) => {
    const w = i % workerCount;
    const state = workers[w];
    if (!state) return;
    while (leased.size < total && Date.now() < dueAt + 300_000) {
      const room = leaseRoom({
        concurrency,
        prefetch,
        inHand: state.hold.inHand(),
        heldAhead: state.hold.heldStartingAfter(Date.now() + AHEAD_MS),
        asking: state.asking,
      });
      if (room <= 0) {
        await sleep(20);
        continue;
      }
      const max = Math.min(room, leaseMax);
      state.asking += max;
      const asked = Date.now();
      const leases = await leaseRuns(deps, worker, {
        workerId: `w${w}`,
        types: ["fair"],
        max,
        waitSeconds: 1,
      }).finally(() => {
        state.asking -= max;
      });
      const at = Date.now();
      if (values.trace && leases.length > 0) {
        const ofB = leases.filter((lease) => tenantOf.get(lease.jobId) === "b").length;
        console.log(`w${w}: ${asked - dueAt} -> ${at - dueAt} ms: ${leases.length - ofB} of A, ${ofB} of B`);
      }
      for (const lease of leases) {
        if (leased.has(lease.runKey)) duplicates += 1;
        leased.add(lease.runKey);
        const startable = Math.max(at, Date.parse(lease.startAt));
        lateness[tenantOf.get(lease.jobId) ?? "a"].push(startable - Date.parse(lease.scheduledFor));
        state.hold.add(lease);
      }
      if (leases.length > 0 && leases.length < max) await sleep(1_000);
    }
  }),
);
await Promise.all(workers.map((state) => state.hold.idle()));

const report = (name: string, values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const [p50, p95, p99] = [50, 95, 99].map((p) => percentile(sorted, p));
  console.log(
    `tenant ${name}: ${values.length} leased, lateness (could start - due) p50 ${p50} ms, p95 ${p95} ms, p99 ${p99} ms, max ${sorted.at(-1)} ms`,
  );
  return p99 ?? Number.POSITIVE_INFINITY;
};
console.log(
  `machine: ${process.platform} ${process.arch}, Node ${process.version}, ${(await import("node:os")).cpus().length} cores`,
);
report("A", lateness.a);
const p99B = report("B", lateness.b);
console.log(
  `drain: all ${total} leased and completed ${lastDone - dueAt} ms after the due second; duplicates ${duplicates}`,
);
reportVerdict([
  exactly("tenant A runs leased", lateness.a.length, counts.a),
  exactly("tenant B runs leased", lateness.b.length, counts.b),
  exactly("duplicate leases", duplicates, 0),
  atMost("tenant B lateness p99 ms", p99B, 100),
]);
await stack.close();
