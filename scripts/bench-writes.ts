/**
 * bench-writes: the write units of each step of a run, by DynamoDB's rules (the table's and every
 * index's, capacity-meter.ts), on the real handlers and adapters against dynalite. Deterministic:
 * no worker loop, no timing; the scheduler's clock is moved to each run's second.
 *
 *   npx tsx scripts/bench-writes.ts [--max-one-off N] [--max-cron N]
 *
 * Prints each step of a one-off worker run that succeeds at once (due within 15 minutes, its run
 * made at create, decision 0048; the same with an idempotency key, decision 0052; and 20 minutes
 * ahead, made by the sweep), and of an every-minute cron's
 * runs (its steady state is its second block of runs, decision 0044: one sweep makes a block's
 * runs and moves the job on once, then each minute's run is leased and completed). The sweep
 * cursor's write, once a group an hour, and the tick's ahead ledger, once a tick, are printed
 * apart and not counted to a run. Exits
 * non-zero if a one-off run costs more than --max-one-off write units (issue 28: 6) or a cron
 * run more than --max-cron (4).
 */
import "../local/runtime-env";
import { parseArgs } from "node:util";
import { createSqsClient } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import { madeRunMessageOf } from "../lambdas/core/delivery";
import { isFiledAhead } from "../lambdas/core/job";
import { SHARDS_PER_GROUP, shardOf } from "../lambdas/core/keys";
import { madeRunsAfter } from "../lambdas/core/made-runs";
import { CURSOR_SAFETY_MS } from "../lambdas/core/use-cases/sweep-group";
import { CLOUD_SETTINGS, LOCAL_SETTINGS } from "../lambdas/definitions/settings";
import { createApiHandler } from "../lambdas/handlers/api";
import { createInternalHandler } from "../lambdas/handlers/internal";
import { loadLocalCredentials } from "../local/local-credentials";
import { httpEvent, invoke, TEST_WORKER_BINDINGS, workerEvent } from "../test/support/http-event";
import { OffsetClock } from "../test/support/offset-clock";
import { tickSweep } from "../test/support/tick-sweeps";
import { meteredTable, startBenchStack } from "./bench-support";
import { atMost, reportVerdict } from "./bench-verdict";

const { values } = parseArgs({
  options: {
    "max-one-off": { type: "string", default: "6" },
    "max-cron": { type: "string", default: "4" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log("usage: npx tsx scripts/bench-writes.ts [--max-one-off 6] [--max-cron 4]");
  process.exit(0);
}

// The cloud's settings, but a sweep lookahead under a minute: the bench moves the scheduler's
// clock, not SQS's, so a run must be queued with no delay to be leased at once (a block's later
// runs, queued with a delay in real time, are delivered by deliverNow below). The writes a run
// costs do not depend on how far ahead it was created.
const stack = await startBenchStack(`bench-writes-${Date.now()}`, {
  sameProcess: true,
  settings: { ...CLOUD_SETTINGS, leasesPerSecond: LOCAL_SETTINGS.leasesPerSecond, lookaheadSeconds: 30 },
});
const { config } = stack;
const { capacity, db } = meteredTable(config);
const clock = new OffsetClock();
const workerBindings = new Map([...loadLocalCredentials().workerBindings, ...TEST_WORKER_BINDINGS]);
const deps = {
  ...createSchedulerDeps({ ...config, workerBindings }, db, createSqsClient(config)),
  clock,
};
const api = createApiHandler(deps);
const internal = createInternalHandler(deps);

interface Step {
  readonly step: string;
  readonly wru: number;
  readonly index: number;
  /** DynamoDB calls by command (writes and reads), to tell which writes the step made. */
  readonly calls: string;
}

/**
 * The tick's ahead ledger (decision 0059): one write a tick for all the groups it hands slices
 * to, whether or not they hold anything (1,440 a day at the defaults, whatever the volume), not a
 * run's: its units are taken out of the step that wrote it and shown apart (`tickFixed`). A
 * sweep writes the ledger only when it fails to send (a rewind): charged to the step
 * (`sweepShared`), and to the run alone in its sweep in the verdict.
 */
const tickFixed: Step[] = [];
const sweepShared: Step[] = [];
let ledgerMoveWru = 0;
let ledgerRewindWru = 0;
const moveAheadLedger = deps.jobs.moveAheadLedger.bind(deps.jobs);
deps.jobs.moveAheadLedger = async (moves) => {
  const before = capacity.writes();
  const moved = await moveAheadLedger(moves);
  ledgerMoveWru += capacity.writes() - before;
  return moved;
};
const rewindAheadLedger = deps.jobs.rewindAheadLedger.bind(deps.jobs);
deps.jobs.rewindAheadLedger = async (group, from) => {
  const before = capacity.writes();
  await rewindAheadLedger(group, from);
  ledgerRewindWru += capacity.writes() - before;
};

/** Runs `action` and records the write units it cost (table and indexes). */
async function measured(steps: Step[], step: string, action: () => Promise<void>): Promise<void> {
  capacity.reset();
  ledgerMoveWru = 0;
  ledgerRewindWru = 0;
  await action();
  const calls = Object.entries(capacity.calls())
    .map(([command, count]) => `${command.replace(/Command$/, "")} ${count}`)
    .join(", ");
  steps.push({
    step,
    wru: capacity.writes() - ledgerMoveWru - ledgerRewindWru,
    index: capacity.indexWrites(),
    calls,
  });
  if (ledgerMoveWru > 0)
    tickFixed.push({
      step: `${step}, of it: the tick's ahead ledger (one write a tick for all its groups, not a run's)`,
      wru: ledgerMoveWru,
      index: 0,
      calls: "UpdateItem 1",
    });
  if (ledgerRewindWru > 0)
    sweepShared.push({
      step: `${step}, of it: a rewind of the group's ahead ledger (a send failed)`,
      wru: ledgerRewindWru,
      index: 0,
      calls: "UpdateItem 1",
    });
}

function expectStatus(answer: { status: number; body: unknown }, status: number, what: string) {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
}

/**
 * Moves the clock to 2 s before `dueAt`, sweeps the job's group, leases the job's due runs and completes them; returns how many ran.
 */
async function runDue(steps: Step[], jobId: string, type: string, dueAt: number, label: string) {
  clock.offsetMs = dueAt - 2_000 - Date.now();
  await measured(steps, `${label}: tick and sweep (runs created, job advanced)`, async () => {
    await tickSweep(deps, Math.floor(shardOf(jobId) / SHARDS_PER_GROUP));
  });
  await deliverNow(jobId, dueAt);
  let leases: Array<{ runId: string; fence: number; jobId: string }> = [];
  await measured(steps, `${label}: lease`, async () => {
    const answer = await invoke(
      internal,
      workerEvent("POST /internal/leases", {
        body: { workerId: "w-1", types: [type], max: 10, waitSeconds: 5 },
      }),
    );
    expectStatus(answer, 200, "lease");
    leases = (answer.body as unknown as typeof leases).filter((l) => l.jobId === jobId);
    if (leases.length === 0) throw new Error(`${label}: no run leased: ${JSON.stringify(answer.body)}`);
  });
  await measured(steps, `${label}: completion`, async () => {
    for (const lease of leases) {
      const answer = await invoke(
        internal,
        workerEvent("POST /internal/leases/{runId}/complete", {
          pathParameters: { runId: lease.runId },
          body: { fence: lease.fence, result: "succeeded" },
        }),
      );
      expectStatus(answer, 200, "complete");
    }
  });
  return leases.length;
}

/**
 * A run made ahead in a block was queued with a delay that SQS counts in real time, while the
 * bench moves only the scheduler's clock: a copy of its message is sent now, as SQS would
 * deliver it at this second. A message costs no write unit; the lease step drops the late
 * original. Not for a run the sweep just queued without a delay (minute 1's).
 */
async function deliverNow(jobId: string, dueAt: number) {
  // The run is made and not written (decision 0051): its job says it made it.
  const job = await deps.jobs.getJob(jobId);
  // A one-off made ahead at create: the sweep just sent its run, without a delay (decision 0058).
  if (job && isFiledAhead(job) && job.madeAheadAt === dueAt) return;
  const run = job && madeRunsAfter(job, dueAt - 1).find((r) => r.scheduledFor === dueAt);
  if (!run || (await deps.runs.getRun(jobId, dueAt)) || clock.now() - job.updatedAt < 1_000) return;
  await deps.queue.send([{ message: madeRunMessageOf(run), delaySeconds: 0 }]);
}

// A warm-up: the first job of a tenant and type records the type (quota) and the sweep creates
// the type's lane; a steady deployment has both. One job of each type runs first, unmeasured.
for (const [type, at] of [
  ["writes.once", 120_000],
  ["writes.cron", 180_000],
] as const) {
  const warmAt = Math.ceil((clock.now() + at) / 1000) * 1000;
  const answer = await invoke(
    api,
    httpEvent("POST /api/v1/jobs", { body: { type, runAt: new Date(warmAt).toISOString() } }),
  );
  expectStatus(answer, 201, "warm-up create");
  await runDue([], String(answer.body.jobId), type, warmAt, "warm-up");
}

// A one-off worker run that succeeds at once, two ways: created 5 minutes ahead, its run made
// at create (a one-off due within 15 minutes: decision 0048), and created 20 minutes ahead, its
// run made by the sweep from the due index (beyond SQS's longest delay).
const HOUR_MS = 3_600_000;
const early = (CLOUD_SETTINGS.tickSeconds + 1) * 1000; // the cursor's sweep, a tick before
// Both sweeps under one cursor hour (the cursor moves to the hour of CURSOR_SAFETY_MS ago, once
// an hour): the bench's figures never depend on the minute it runs at.
const cursorHour = (at: number) => Math.floor((at - CURSOR_SAFETY_MS) / HOUR_MS);
// The group's sweep cursor moves to each new hour once, whatever the group holds: a write a
// group an hour (32 groups: 768 a day), not a run's. A sweep before the run comes due pays it
// here, apart, as it is spread over the hour's runs at scale.
const fixed: Step[] = [];

async function measureOneOff(
  steps: Step[],
  label: string,
  aheadMs: number,
  madeAtCreate: boolean,
  extra: { readonly idempotencyKey?: string } = {},
) {
  const planned = Math.ceil((clock.now() + aheadMs) / 1000) * 1000;
  const runAt = cursorHour(planned - early) === cursorHour(planned - 2_000) ? planned : planned + early;
  let jobId = "";
  await measured(steps, `${label}: create (POST /api/v1/jobs)`, async () => {
    const answer = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", {
        body: { type: "writes.once", runAt: new Date(runAt).toISOString(), ...extra },
      }),
    );
    expectStatus(answer, 201, "create");
    jobId = String(answer.body.jobId);
  });
  clock.offsetMs = runAt - early - Date.now();
  await measured(
    fixed,
    `${label}: the group's sweep cursor, once an hour (not counted to a run)`,
    async () => {
      await tickSweep(deps, Math.floor(shardOf(jobId) / SHARDS_PER_GROUP));
    },
  );
  const stored = await deps.jobs.getJob(jobId);
  const made = stored?.nextRunAt === undefined && stored?.lastFiringAt === runAt;
  if (made !== madeAtCreate) throw new Error(`${label}: run ${made ? "made" : "not made"} before the sweep`);
  if ((await runDue(steps, jobId, "writes.once", runAt, label)) !== 1)
    throw new Error(`${label}: not one run`);
}

const oneOff: Step[] = [];
await measureOneOff(oneOff, "one-off", 300_000, true);
// With an idempotency key, made at create too (decision 0052).
const oneOffKeyed: Step[] = [];
await measureOneOff(oneOffKeyed, "one-off keyed", 300_000, true, { idempotencyKey: "bench-writes-keyed" });
const oneOffSwept: Step[] = [];
await measureOneOff(oneOffSwept, "one-off 20 min ahead", 20 * 60_000, true);

// An every-minute cron from a minute 10 minutes ahead (left to the sweep): its first block of
// runs, then its second, the steady state (a block is advanceBlockSeconds of firings).
const BLOCK_MINUTES = CLOUD_SETTINGS.advanceBlockSeconds / 60;

const cron: Step[] = [];
let cronId = "";
let next = 0;
await measured(cron, "cron: create", async () => {
  const answer = await invoke(
    api,
    httpEvent("POST /api/v1/jobs", {
      body: {
        type: "writes.cron",
        cron: "* * * * *",
        startAt: new Date(Math.ceil((clock.now() + 600_000) / 60_000) * 60_000).toISOString(),
      },
    }),
  );
  expectStatus(answer, 201, "create");
  cronId = String(answer.body.jobId);
  next = Date.parse(String(answer.body.nextRunAt));
});
let steadyRuns = 0;
for (let minute = 1; minute <= 2 * BLOCK_MINUTES; minute++) {
  const ran = await runDue(
    cron,
    cronId,
    "writes.cron",
    next + (minute - 1) * 60_000,
    `cron minute ${minute}`,
  );
  if (minute > BLOCK_MINUTES) steadyRuns += ran;
}

const total = (steps: readonly Step[], prefix: string) =>
  steps.filter((s) => s.step.startsWith(prefix)).reduce((sum, s) => sum + s.wru, 0);
console.log("step | WRU | of it, index entries | DynamoDB calls");
for (const s of [...fixed, ...tickFixed, ...sweepShared, ...oneOff, ...oneOffKeyed, ...oneOffSwept, ...cron])
  console.log(`${s.step} | ${s.wru.toFixed(1)} | ${s.index.toFixed(1)} | ${s.calls}`);
const oneOffRun = total(oneOff, "one-off");
const oneOffKeyedRun = total(oneOffKeyed, "one-off");
const oneOffSweptRun = total(oneOffSwept, "one-off");
const steadySteps = cron.filter((s) => Number(/cron minute (\d+)/.exec(s.step)?.[1]) > BLOCK_MINUTES);
const cronRun = total(steadySteps, "cron minute") / steadyRuns;
console.log(
  `a one-off worker run that succeeds at once, due within 15 minutes (its run made at create): ${oneOffRun.toFixed(1)} WRU (create to completion)`,
);
console.log(
  `a one-off worker run that succeeds at once, due within 15 minutes, created with an idempotency key: ${oneOffKeyedRun.toFixed(1)} WRU`,
);
const sweepWritesOfSweptRun = total(sweepShared, "one-off 20 min ahead");
console.log(
  `a one-off worker run that succeeds at once, created 20 minutes ahead (its run made ahead at create, sent by the sweep: decisions 0058, 0059): ${oneOffSweptRun.toFixed(1)} WRU; with its sweep's own ledger writes, were it the only run that sweep sent: ${(oneOffSweptRun + sweepWritesOfSweptRun).toFixed(1)}`,
);
const ticks = tickFixed.length;
console.log(
  `the tick's ahead ledger: ${ticks === 0 ? 0 : (total(tickFixed, "") / ticks).toFixed(1)} WRU a tick (${ticks} ticks measured), whatever the runs: ${(1_440 * (ticks === 0 ? 0 : total(tickFixed, "") / ticks)).toFixed(0)} a day at a tick a minute`,
);
console.log(
  `an every-minute cron's run (steady state: its second block, minutes ${BLOCK_MINUTES + 1}-${2 * BLOCK_MINUTES}, ${steadyRuns} runs): ${cronRun.toFixed(1)} WRU`,
);
await stack.close();
reportVerdict([
  atMost("one-off run due within 15 minutes, WRU", oneOffRun, Number(values["max-one-off"]), (n) =>
    n.toFixed(1),
  ),
  atMost(
    "one-off run due within 15 minutes, keyed, WRU",
    oneOffKeyedRun,
    Number(values["max-one-off"]),
    (n) => n.toFixed(1),
  ),
  // Judged alone in its group's sweep, what that sweep wrote to the ledger included (nothing
  // unless a send failed, decision 0059): at a million runs a month most runs are.
  atMost(
    "one-off run 20 minutes ahead, alone in its group's sweep, WRU",
    oneOffSweptRun + sweepWritesOfSweptRun,
    Number(values["max-one-off"]),
    (n) => n.toFixed(1),
  ),
  atMost("every-minute cron run, WRU", cronRun, Number(values["max-cron"]), (n) => n.toFixed(1)),
]);
