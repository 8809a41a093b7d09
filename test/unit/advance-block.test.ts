import { describe, expect, it } from "vitest";
import { blockFirings, blockHorizon, MAX_RUNS_PER_BLOCK } from "../../lambdas/core/advance-block";
import { RunStatus } from "../../lambdas/core/run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/** Recurring jobs advanced in blocks (decision 0044). */
const NOW = Date.UTC(2026, 11, 2, 9, 0, 0);
const MINUTE = 60_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };
const cron = (everyMinutes: number) => ({
  kind: "cron" as const,
  cron: everyMinutes === 1 ? "* * * * *" : `*/${everyMinutes} * * * *`,
  timeZone: "UTC",
});

/** An every-minute job created just before 09:00, its first block fired at 09:00. */
async function firedBlock(deps: MemoryDeps, extra: Record<string, unknown> = {}) {
  const { jobId } = await createJob(deps, alice, {
    type: "tick",
    cron: "* * * * *",
    startAt: new Date(NOW).toISOString(),
    ...extra,
  });
  const job = await deps.jobs.getJob(jobId);
  if (job?.nextRunAt === undefined) throw new Error("no next run");
  deps.clock.set(NOW);
  await fireJobs(deps, [{ ...job, nextRunAt: job.nextRunAt }]);
  return jobId;
}
/**
 * The job's runs, oldest first: written ones, and the pending runs the block's messages carry
 * (a made run is written first by its lease, or by what ends it unstarted: decision 0051).
 */
const runsOf = knownRunsOf;

describe("blockHorizon and blockFirings", () => {
  it("reach advanceBlockSeconds ahead for a recurring job, the lookahead for a one-off or with no block", () => {
    const job = { schedule: cron(1), nextRunAt: NOW };
    expect(blockHorizon(job, NOW, NOW + 30_000, 600)).toBe(NOW + 600_000);
    expect([...blockFirings(job, NOW, NOW + 30_000, 600)]).toHaveLength(10);
    expect(blockHorizon(job, NOW, NOW + 30_000, 0)).toBe(NOW + 30_000);
    const once = { schedule: { kind: "once" as const, runAt: NOW }, nextRunAt: NOW };
    expect(blockHorizon(once, NOW, NOW + 30_000, 600)).toBe(NOW + 30_000);
  });

  it("end on a grid of blockSeconds, the last point within SQS's reach, so jobs firing together share a sweep", () => {
    const job = { schedule: cron(1), nextRunAt: NOW + 4 * MINUTE };
    // At 09:03:20 the last multiple of 10 minutes within 14 minutes is 09:10, not 09:13:20.
    expect(blockHorizon(job, NOW + 200_000, NOW + 230_000, 600)).toBe(NOW + 10 * MINUTE);
    expect(blockHorizon(job, NOW + 9 * MINUTE, NOW + 9 * MINUTE + 90_000, 600)).toBe(NOW + 20 * MINUTE);
  });

  it("stop after MAX_RUNS_PER_BLOCK firings, never short of the lookahead", () => {
    const everySecond = {
      schedule: { kind: "interval" as const, everyMs: 1_000, anchor: NOW },
      nextRunAt: NOW,
    };
    const firings = [...blockFirings(everySecond, NOW, NOW + 30_000, 600)];
    expect(firings).toHaveLength(MAX_RUNS_PER_BLOCK);
    expect(blockHorizon(everySecond, NOW, NOW + 30_000, 600)).toBe((firings.at(-1) ?? 0) + 1);
    expect(blockHorizon(everySecond, NOW, NOW + 90_000, 600)).toBe(NOW + 90_000);
  });
});

describe("a recurring job advanced in blocks", () => {
  it("makes ten minutes of an every-minute job's runs in one sweep and moves the job once", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await firedBlock(deps);
    expect(runsOf(deps, jobId).map((r) => (r.scheduledFor - NOW) / MINUTE)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    expect(deps.queue.sent).toHaveLength(10);
    expect(deps.runs.runs.size).toBe(0); // made, not written: their messages carry them
    expect(deps.jobs.jobs.get(jobId)?.nextRunAt).toBe(NOW + 10 * MINUTE);
    // The job shows its next firing from now, not the block's end.
    deps.clock.set(NOW + 2 * MINUTE + 1);
    expect((await getJob(deps, alice, jobId)).nextRunAt).toBe("2026-12-02T09:03:00Z");
  });

  it("a schedule change cancels the runs made ahead that it does not fire, keeps those it does, and goes on after them", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await firedBlock(deps);
    deps.clock.set(NOW + 30_000);
    const answer = await updateJob(deps, alice, jobId, { cron: "*/4 * * * *" }, undefined);
    const runs = runsOf(deps, jobId);
    const status = (minute: number) => runs.find((r) => r.scheduledFor === NOW + minute * MINUTE)?.status;
    expect(status(4)).toBe(RunStatus.Pending);
    expect(status(8)).toBe(RunStatus.Pending);
    for (const minute of [1, 2, 3, 5, 6, 7, 9]) expect(status(minute)).toBe(RunStatus.Cancelled);
    expect(deps.jobs.jobs.get(jobId)?.nextRunAt).toBe(NOW + 12 * MINUTE);
    expect(answer.job.nextRunAt).toBe("2026-12-02T09:04:00Z");
  });

  it("a pause of a bounded job whose last block is made rewinds to its next firing too", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await firedBlock(deps, { endAt: new Date(NOW + 5 * MINUTE).toISOString() });
    expect(deps.jobs.jobs.get(jobId)?.nextRunAt).toBeUndefined(); // every firing made
    deps.clock.set(NOW + 30_000);
    expect((await getJob(deps, alice, jobId)).nextRunAt).toBe("2026-12-02T09:01:00Z");
    await controlJob(deps, alice, jobId, "pause");
    expect(deps.jobs.jobs.get(jobId)?.nextRunAt).toBe(NOW + MINUTE);
  });

  it("a change to a one-off cancels every run ahead, and refuses an instant a run already holds", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await firedBlock(deps);
    deps.clock.set(NOW + 30_000);
    await expect(
      updateJob(deps, alice, jobId, { runAt: new Date(NOW + 3 * MINUTE).toISOString() }, undefined),
    ).rejects.toThrow(/runAt: job .* has a run at/);
    await updateJob(
      deps,
      alice,
      jobId,
      { runAt: new Date(NOW + 3 * MINUTE + 5_000).toISOString() },
      undefined,
    );
    const ahead = runsOf(deps, jobId).filter((r) => r.scheduledFor > NOW + 30_000 && r.origin === undefined);
    expect(ahead.filter((r) => r.status === RunStatus.Pending)).toEqual([]);
  });

  it("a cancel cancels the runs made ahead at once", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await firedBlock(deps);
    deps.clock.set(NOW + 30_000);
    await controlJob(deps, alice, jobId, "cancel");
    const ahead = runsOf(deps, jobId).filter((r) => r.scheduledFor > NOW + 30_000);
    expect(ahead).toHaveLength(9);
    for (const run of ahead) expect(run.status).toBe(RunStatus.Cancelled);
  });

  for (const [policy, reran] of [
    ["catch-up", [1, 2]],
    ["run-once", [2]],
    ["skip", []],
  ] as const)
    it(`a pause over runs made ahead, then a resume: the missed-run policy (${policy}) decides which run`, async () => {
      const deps = memoryDeps(NOW - MINUTE);
      const jobId = await firedBlock(deps, { missedRuns: policy });
      deps.clock.set(NOW + 30_000);
      await controlJob(deps, alice, jobId, "pause");
      // The job resumes from its first firing from now, not the block's end.
      expect(deps.jobs.jobs.get(jobId)?.nextRunAt).toBe(NOW + MINUTE);
      // 09:01 and 09:02 come due in the pause: the lease step records them missed.
      for (const minute of [1, 2]) {
        deps.clock.set(NOW + minute * MINUTE);
        deps.queue.ready.push(
          ...deps.queue.sent
            .filter((s) => s.message.scheduledFor === NOW + minute * MINUTE)
            .map((s, i) => ({ message: s.message, receiptHandle: `m${minute}-${i}` })),
        );
        expect(
          await leaseRuns(deps, worker, { workerId: "w", types: ["tick"], max: 10, waitSeconds: 0 }),
        ).toEqual([]);
      }
      deps.clock.set(NOW + 2 * MINUTE + 40_000);
      await controlJob(deps, alice, jobId, "resume");
      const again = runsOf(deps, jobId)
        .filter(
          (r) => r.status === RunStatus.Pending && r.scheduledFor > NOW && r.scheduledFor < NOW + 3 * MINUTE,
        )
        .map((r) => (r.scheduledFor - NOW) / MINUTE);
      expect(again).toEqual(reran);
    });
});

describe("hiddenWhileHeld", () => {
  it("hides a message until a live lease ends and a second, and never for a run under none", async () => {
    const { hiddenWhileHeld } = await import("../../lambdas/core/delivery");
    expect(hiddenWhileHeld(undefined, NOW)).toBeUndefined();
    expect(hiddenWhileHeld({ status: RunStatus.Pending, leaseExpiresAt: undefined }, NOW)).toBeUndefined();
    expect(hiddenWhileHeld({ status: RunStatus.Leased, leaseExpiresAt: undefined }, NOW)).toBeUndefined();
    expect(hiddenWhileHeld({ status: RunStatus.Leased, leaseExpiresAt: NOW }, NOW)).toBeUndefined();
    expect(hiddenWhileHeld({ status: RunStatus.Leased, leaseExpiresAt: NOW + 29_500 }, NOW)).toBe(31);
    expect(hiddenWhileHeld({ status: RunStatus.Leased, leaseExpiresAt: NOW + 86_400_000 }, NOW)).toBe(43_140);
  });
});

describe("a run missed in a pause after a lease that lapsed", () => {
  for (const [delivery, rerun] of [
    ["at-least-once", true],
    ["at-most-once", false],
  ] as const)
    it(`is run again on resume only if it may run twice (${delivery})`, async () => {
      const { PAUSED_RUN_REASON } = await import("../../lambdas/core/run");
      const deps = memoryDeps(NOW - MINUTE);
      const jobId = await firedBlock(deps, { missedRuns: "catch-up", delivery });
      deps.clock.set(NOW + 30_000);
      await controlJob(deps, alice, jobId, "pause");
      const made = runsOf(deps, jobId).find((r) => r.scheduledFor === NOW + MINUTE);
      if (!made) throw new Error("no run at 09:01");
      // Leased once before the pause (its lease wrote it), its lease lapsed in it: recorded
      // missed by the lease step.
      expect(
        await deps.runs.createRun({
          ...made,
          status: RunStatus.Missed,
          error: PAUSED_RUN_REASON,
          attempt: 1,
          fence: 1,
        }),
      ).toBe("created");
      deps.clock.set(NOW + MINUTE + 40_000);
      await controlJob(deps, alice, jobId, "resume");
      expect((await deps.runs.getRun(jobId, NOW + MINUTE))?.status).toBe(
        rerun ? RunStatus.Pending : RunStatus.Missed,
      );
    });
});
