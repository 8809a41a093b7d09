import { describe, expect, it } from "vitest";
import { scheduledRun } from "../../lambdas/core/lifecycle/creation";
import { type RunRecord, transition } from "../../lambdas/core/lifecycle/transition";
import { RunStatus } from "../../lambdas/core/run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { cancelRunsAhead } from "../../lambdas/core/use-cases/runs-ahead";
import { memoryDeps } from "../support/memory-ports";

/** Decision 0045: a job's last run enters the repair index only when its job cannot end yet. */
const T = Date.UTC(2026, 11, 2, 9, 0, 0);
const job = { jobId: "j_tracking0000000000", tenant: "t", type: "x" };
const finishedLast: RunRecord = {
  ...scheduledRun(job, T, T, true),
  status: RunStatus.Succeeded,
  finishedAt: T + 1_000,
};

describe("the lifecycle's track event", () => {
  it("puts a finished last run with no entry into the repair index, from the check time given", () => {
    expect(transition(finishedLast, { kind: "track", checkAt: T + 60_000 })).toEqual({
      ...finishedLast,
      checkAt: T + 60_000,
    });
  });

  it.each([
    ["not its job's last", { ...finishedLast, final: false }],
    ["unfinished", { ...finishedLast, status: RunStatus.Leased, finishedAt: undefined }],
    ["in the index already", { ...finishedLast, checkAt: T + 5_000 }],
  ])("refuses a run %s (nothing written)", (_why, run) => {
    expect(transition(run, { kind: "track", checkAt: T + 60_000 })).toBeUndefined();
  });

  it("refuses a run that is not there", () => {
    expect(transition(undefined, { kind: "track", checkAt: T })).toBeUndefined();
  });
});

describe("cancelRunsAhead", () => {
  it("takes a cancelled last run out of the repair index only when it was in it", async () => {
    const deps = memoryDeps(T - 60_000);
    const untracked = scheduledRun(job, T, T - 60_000, true);
    const tracked = {
      ...scheduledRun({ ...job, jobId: "j_tracking0000000001" }, T, T - 60_000, true),
      checkAt: T,
    };
    await deps.runs.createRun(untracked);
    await deps.runs.createRun(tracked);
    const settled: string[] = [];
    const settle = deps.runs.settleFinalRun.bind(deps.runs);
    deps.runs.settleFinalRun = async (jobId, at) => {
      settled.push(jobId);
      await settle(jobId, at);
    };
    await cancelRunsAhead(deps, [untracked, tracked], "superseded", T - 60_000);
    expect(settled).toEqual([tracked.jobId]); // no wasted conditional write for the other
    const runs = [...deps.runs.runs.values()];
    expect(runs.map((r) => [r.status, r.checkAt])).toEqual([
      [RunStatus.Cancelled, undefined],
      [RunStatus.Cancelled, undefined],
    ]);
  });
});

describe("a local queue reset", () => {
  it("ends only an active job from its finished last run; a completed or paused job is left alone", async () => {
    const deps = memoryDeps(T);
    const caller = { tenant: "t", principal: "p" };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { jobId } = await createJob(deps, caller, {
        type: "x",
        runAt: new Date(T + 3_600_000).toISOString(),
      });
      ids.push(jobId);
      await deps.runs.createRun({
        ...scheduledRun({ ...job, jobId }, T, T, true),
        status: RunStatus.Succeeded,
        finishedAt: T,
      });
    }
    const [active, done, paused] = ids.map((id) => deps.jobs.jobs.get(id));
    if (!active || !done || !paused) throw new Error("no jobs");
    // Recurring jobs bounded to the run's firing: a one-off's end is its run's, unwritten
    // (decision 0057), so only these are marked.
    const bounded = { kind: "cron", cron: "* * * * *", timeZone: "UTC", endAt: T } as const;
    for (const j of [active, done, paused])
      deps.jobs.jobs.set(j.jobId, { ...j, schedule: bounded, nextRunAt: undefined });
    deps.jobs.jobs.set(done.jobId, { ...done, schedule: bounded, nextRunAt: undefined, status: "completed" });
    deps.jobs.jobs.set(paused.jobId, {
      ...paused,
      schedule: bounded,
      nextRunAt: undefined,
      status: "paused",
    });
    const marked: string[] = [];
    const completeJob = deps.jobs.completeJob.bind(deps.jobs);
    deps.jobs.completeJob = async (jobId, now) => {
      marked.push(jobId);
      return completeJob(jobId, now);
    };
    await repairRuns(deps, { queueWasReset: true });
    expect(marked).toEqual([active.jobId]);
    expect(deps.jobs.jobs.get(active.jobId)?.status).toBe("completed");
    expect(deps.jobs.jobs.get(paused.jobId)?.status).toBe("paused");
  });
});
