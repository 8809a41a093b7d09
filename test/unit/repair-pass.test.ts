import { describe, expect, it } from "vitest";
import { allRepairKeys, repairKeyOf } from "../../lambdas/core/keys";
import { RunStatus } from "../../lambdas/core/run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import {
  BUSY_LANE_RECHECK_MS,
  RESENDS_PER_TENANT,
  repairRuns,
} from "../../lambdas/core/use-cases/repair-runs";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps, watchedRun } from "../support/memory-ports";

/**
 * The repair pass under load (issue 15): a run whose message waits in a busy lane is not
 * re-sent every pass; a flood of one tenant's runs does not crowd out the others; a pass keeps
 * to its time budget, starts at a different partition each minute, and survives failures.
 */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };

/** `count` one-off runs of `tenant` and `type`, due now, their messages queued (then lost or waiting). */
/** Pending runs the repair pass watches (manual runs: a firing's is carried by its message). */
async function pendingRuns(deps: MemoryDeps, count: number, tenant = "t", type = "x") {
  for (let i = 0; i < count; i++) await watchedRun(deps, { tenant, principal: "p" }, type);
  deps.queue.sent.length = 0;
}
const graceMs = (deps: MemoryDeps) => deps.settings.repairGraceSeconds * 1000;

describe("the repair pass", () => {
  it("leaves a run waiting in a busy lane (an unserved type) alone, and re-sends it at most once an hour", async () => {
    const deps = memoryDeps(NOW);
    await pendingRuns(deps, 3, "t", "unserved");
    deps.queue.backlogs.set("t\nunserved", 3); // nobody leases this type: its messages wait
    const resentAt: number[] = [];
    // Three hours of minute ticks.
    for (let minute = 0; minute <= 180; minute++) {
      deps.clock.set(NOW + graceMs(deps) + minute * 60_000);
      const before = deps.queue.sent.length;
      await repairRuns(deps);
      if (deps.queue.sent.length > before) resentAt.push(deps.clock.now());
    }
    // Each of the 3 runs at most once an hour: 3 runs x at most 3 hours.
    expect(deps.queue.sent.length).toBeLessThanOrEqual(9);
    expect(deps.queue.sent.length).toBeGreaterThan(0); // a lost message in a busy lane is still found
    for (const runId of new Set(deps.queue.sent.map((s) => s.message.runId))) {
      const times = deps.queue.sent.flatMap((s, i) => (s.message.runId === runId ? [i] : []));
      expect(times.length).toBeLessThanOrEqual(3);
    }
    for (let i = 1; i < resentAt.length; i++) {
      expect((resentAt[i] ?? 0) - (resentAt[i - 1] ?? 0)).toBeGreaterThanOrEqual(BUSY_LANE_RECHECK_MS);
    }
  });

  it("re-sends a run whose lane is empty after the grace, as before", async () => {
    const deps = memoryDeps(NOW);
    await pendingRuns(deps, 2);
    deps.clock.set(NOW + graceMs(deps));
    expect(await repairRuns(deps)).toMatchObject({ resent: 2, finished: true });
  });

  it("re-sends at most RESENDS_PER_TENANT runs of one tenant a pass; the others' runs are not crowded out", async () => {
    const deps = memoryDeps(NOW);
    await pendingRuns(deps, RESENDS_PER_TENANT + 200, "noisy");
    await pendingRuns(deps, 10, "quiet");
    deps.clock.set(NOW + graceMs(deps));
    const first = await repairRuns(deps);
    expect(first).toMatchObject({ resent: RESENDS_PER_TENANT + 10, deferred: 200 });
    const quiet = deps.queue.sent.filter((s) => s.message.tenant === "quiet");
    expect(quiet).toHaveLength(10);
    deps.clock.advance(1_000); // the next pass, before the re-sent runs' next check
    deps.queue.sent.length = 0;
    expect(await repairRuns(deps)).toMatchObject({ resent: 200, deferred: 0 }); // the rest, next pass
  });

  it("stops starting work when its budget is spent, and starts at a different partition each minute", async () => {
    const deps = memoryDeps(NOW);
    await pendingRuns(deps, 20);
    deps.clock.set(NOW + graceMs(deps));
    const asked: string[] = [];
    const query = deps.runs.queryRepairCandidates.bind(deps.runs);
    deps.runs.queryRepairCandidates = (key, ...rest) => {
      asked.push(key);
      deps.clock.advance(1_000); // each read takes a second
      return query(key, ...rest);
    };
    const stats = await repairRuns(deps, { budgetMs: 5_000 });
    expect(stats.finished).toBe(false);
    expect(asked.length).toBeLessThanOrEqual(6);
    const keys = allRepairKeys();
    const firstAt = (at: number) => keys[Math.floor(at / 60_000) % keys.length];
    expect(asked[0]).toBe(firstAt(NOW + graceMs(deps)));
    asked.length = 0;
    deps.clock.set(NOW + graceMs(deps) + 60_000);
    await repairRuns(deps, { budgetMs: 5_000 });
    expect(asked[0]).toBe(firstAt(NOW + graceMs(deps) + 60_000));
    expect(asked[0]).not.toBe(keys[Math.floor((NOW + graceMs(deps)) / 60_000) % keys.length]);
  });

  it("goes on past a partition that cannot be read and a run whose re-send fails", async () => {
    const deps = memoryDeps(NOW);
    await pendingRuns(deps, 40);
    deps.clock.set(NOW + graceMs(deps));
    const keys = allRepairKeys();
    const broken = keys[0];
    const query = deps.runs.queryRepairCandidates.bind(deps.runs);
    deps.runs.queryRepairCandidates = (key, ...rest) =>
      key === broken ? Promise.reject(new Error("throttled")) : query(key, ...rest);
    let sends = 0;
    const send = deps.queue.send.bind(deps.queue);
    deps.queue.send = (messages) => (++sends === 1 ? Promise.reject(new Error("SQS down")) : send(messages));
    deps.queue.laneBacklogFails = true; // unknown backlog: repaired as if the lane were empty
    const stats = await repairRuns(deps);
    expect(stats).toMatchObject({ errors: 2, finished: true });
    // Every run outside the broken partition but the one whose send failed was re-sent.
    const elsewhere = [...deps.runs.runs.values()].filter((r) => repairKeyOf(r.jobId) !== broken).length;
    expect(elsewhere).toBeGreaterThan(1);
    expect(stats.resent).toBe(elsewhere - 1);
  });
});

describe("the repair pass after the queue lost every message (the local emulator's restart)", () => {
  it("re-sends the scheduled runs the repair index does not hold, and nothing without a reset", async () => {
    const deps = memoryDeps(NOW - 60_000, { advanceBlockSeconds: 0 }); // one firing a sweep
    const { jobId } = await createJob(
      deps,
      { tenant: "t", principal: "p" },
      { type: "x", cron: "* * * * *" },
    );
    const { fireJobs } = await import("../../lambdas/core/use-cases/fire-jobs");
    const job = await deps.jobs.getJob(jobId);
    if (job?.nextRunAt === undefined) throw new Error("no next run");
    deps.clock.set(job.nextRunAt);
    await fireJobs(deps, [{ ...job, nextRunAt: job.nextRunAt }]);
    // The first minute's, fired by the create, and 09:00's: made, not written (decision 0051).
    const made = knownRunsOf(deps, jobId);
    expect(made).toMatchObject([{ status: RunStatus.Pending }, { status: RunStatus.Pending }]);
    expect(deps.runs.runs.size).toBe(0);
    const messages = deps.queue.sent.map((s) => s.message);
    deps.queue.sent.length = 0;
    // A run made and not written is in no table: a reset's pass cannot see it (the local
    // runtime keeps its queue's messages in a journal for that, not this pass).
    expect((await repairRuns(deps, { queueWasReset: true })).resent).toBe(0);

    // Their leases write them, with no repair-index entry: their messages are their carriers.
    deps.queue.ready.push(...messages.map((message, i) => ({ message, receiptHandle: `m${i}` })));
    const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(leases).toHaveLength(2);
    const runs = [...deps.runs.runs.values()];
    expect(runs.map((r) => r.runId).sort()).toEqual(made.map((r) => r.runId).sort());
    for (const run of runs) expect(run.checkAt).toBeUndefined();

    expect((await repairRuns(deps)).resent).toBe(0); // in AWS nothing is re-sent
    expect(deps.queue.sent).toHaveLength(0);
    // A run under a live lease is re-sent to show up only once its lease has ended.
    const leaseSeconds = deps.settings.leaseSeconds;
    expect(leases.map((l) => Date.parse(l.leaseExpiresAt))).toEqual(
      [1, 2].map(() => NOW + leaseSeconds * 1000),
    );
    await repairRuns(deps, { queueWasReset: true });
    expect(deps.queue.sent.map((s) => s.delaySeconds)).toEqual([leaseSeconds + 1, leaseSeconds + 1]);
    // Once the leases lapsed, a reset's pass re-sends both, to be leased again at once.
    deps.clock.set(NOW + (leaseSeconds + 1) * 1000);
    deps.queue.sent.length = 0;
    const reset = await repairRuns(deps, { queueWasReset: true });
    expect(reset.resent).toBe(2);
    expect(deps.queue.sent.map((s) => s.message.runId).sort()).toEqual(runs.map((r) => r.runId).sort());
    expect(deps.queue.sent.map((s) => s.delaySeconds)).toEqual([0, 0]);
  });
});
