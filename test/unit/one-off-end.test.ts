import { describe, expect, it } from "vitest";
import { ConflictError } from "../../lambdas/core/errors";
import { JobStatus } from "../../lambdas/core/job";
import { endingFiringOf, isEndedBy, shownJob } from "../../lambdas/core/one-off-end";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { endJobAfter } from "../../lambdas/core/use-cases/end-job";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { listJobs } from "../../lambdas/core/use-cases/list-jobs";
import { watchJobWrites } from "../support/job-writes";
import { oneOffJob } from "../support/jobs";
import { memoryDeps } from "../support/memory-ports";

/** Decision 0057: a one-off job's end is its run's, derived, never written. */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const caller = { tenant: "t", principal: "arn:aws:iam::111122223333:role/a" };
const worker = { tenant: "t", principal: "arn:aws:iam::111122223333:role/w", tenants: ["t"] };

/** A one-off whose run is made: active, no next run, its firing recorded. */
const waiting = oneOffJob(NOW, NOW - 60_000, { nextRunAt: undefined, lastFiringAt: NOW });
/** Runs kept since: the run retention's start, long before these runs. */
const KEPT = NOW - 90 * 86_400_000;
const finished = {
  scheduledFor: NOW,
  status: RunStatus.Succeeded,
  checkAt: undefined,
  finishedAt: NOW + 2_000,
};

describe("a one-off's end, derived from its run", () => {
  it("is its recorded firing's run, finished, settled and not cancelled", () => {
    expect(endingFiringOf(waiting)).toBe(NOW);
    expect(isEndedBy(waiting, finished, KEPT)).toBe(true);
    for (const status of [RunStatus.DeadLettered, RunStatus.Missed])
      expect(isEndedBy(waiting, { ...finished, status }, KEPT)).toBe(true);
    // Not yet: the run is still to finish, or the repair pass still watches it (a retry, a
    // replay, a firing missed in a pause that its resume may run again).
    for (const status of [RunStatus.Pending, RunStatus.Leased])
      expect(isEndedBy(waiting, { ...finished, status }, KEPT)).toBe(false);
    expect(isEndedBy(waiting, { ...finished, checkAt: NOW + 60_000 }, KEPT)).toBe(false);
    // A run cancelled with a schedule change ends nothing; nor does another firing's run, or none.
    expect(isEndedBy(waiting, { ...finished, status: RunStatus.Cancelled }, KEPT)).toBe(false);
    expect(isEndedBy(waiting, { ...finished, scheduledFor: NOW - 1 }, KEPT)).toBe(false);
    expect(isEndedBy(waiting, undefined, KEPT)).toBe(false);
    // Gone after the run retention: it finished (a made run not started by then is recorded
    // missed) and its item expired.
    expect(isEndedBy(waiting, undefined, NOW + 1)).toBe(true);
  });

  it("is only an active one-off's with no next run: a paused, cancelled or recurring job keeps its own status", () => {
    expect(endingFiringOf({ ...waiting, nextRunAt: NOW + 60_000 })).toBeUndefined();
    expect(endingFiringOf({ ...waiting, status: JobStatus.Paused })).toBeUndefined();
    expect(endingFiringOf({ ...waiting, status: JobStatus.Cancelled })).toBeUndefined();
    const recurring = {
      ...waiting,
      schedule: { kind: "cron", cron: "* * * * *", timeZone: "UTC", endAt: NOW },
    } as const;
    expect(endingFiringOf(recurring)).toBeUndefined();
    expect(shownJob(recurring, finished, KEPT).status).toBe(JobStatus.Active);
  });

  it("shows the job completed when its run finished, as stored otherwise", () => {
    expect(shownJob(waiting, finished, KEPT)).toMatchObject({
      status: JobStatus.Completed,
      updatedAt: NOW + 2_000,
    });
    expect(shownJob(waiting, { ...finished, status: RunStatus.Leased }, KEPT)).toBe(waiting);
  });
});

describe("a one-off run to its end", () => {
  it("writes nothing to its job, and is shown, listed and filtered as completed", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 60_000).toISOString(),
    });
    const other = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 3_600_000).toISOString(),
    });
    const writes = watchJobWrites(deps.jobs, ["completeJob", "replaceJob", "advanceJob", "createJob"]);
    deps.clock.set(NOW + 55_000);
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    if (!lease) throw new Error("no lease");
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect(writes).toEqual([]);
    expect((await deps.jobs.getJob(jobId))?.status).toBe(JobStatus.Active); // as stored

    expect(await getJob(deps, caller, jobId)).toMatchObject({
      status: "completed",
      runs: [{ status: "succeeded" }],
    });
    const listed = (query: Record<string, string>) =>
      listJobs(deps, caller, query).then((page) => page.jobs.map((j) => [j.jobId, j.status]));
    expect(await listed({})).toEqual(
      expect.arrayContaining([
        [jobId, "completed"],
        [other.jobId, "active"],
      ]),
    );
    expect(await listed({ status: "completed" })).toEqual([[jobId, "completed"]]);
    expect(await listed({ status: "active" })).toEqual([[other.jobId, "active"]]);
    // A listing of paused or cancelled jobs reads no run: none of them is shown otherwise.
    let runReads = 0;
    const getRun = deps.runs.getRun.bind(deps.runs);
    deps.runs.getRun = (id: string, at: number) => {
      runReads++;
      return getRun(id, at);
    };
    expect(await listed({ status: "paused" })).toEqual([]);
    expect(await listed({ status: "cancelled" })).toEqual([]);
    expect(runReads).toBe(0);
    await listed({});
    expect(runReads).toBe(1);
    // Acted on as completed: it cannot be paused or cancelled any more.
    await expect(controlJob(deps, caller, jobId, "pause")).rejects.toBeInstanceOf(ConflictError);
    await expect(controlJob(deps, caller, jobId, "cancel")).rejects.toBeInstanceOf(ConflictError);
  });
});

describe("the finisher's read of a one-off's job", () => {
  it("is eventually consistent for a run that ran, and consistent for a missed one (a pause may have kept it)", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 60_000).toISOString(),
    });
    const reads: (boolean | undefined)[] = [];
    const read = deps.jobs.getJob.bind(deps.jobs);
    deps.jobs.getJob = (id: string, eventual?: boolean) => {
      if (id === jobId) reads.push(eventual);
      return read(id, eventual);
    };
    const run = { jobId, scheduledFor: NOW + 60_000 };
    expect(await endJobAfter(deps, run, { final: true, tracked: false }, NOW + 61_000)).toBe(true);
    expect(
      await endJobAfter(
        deps,
        run,
        { final: true, checkAt: undefined, status: RunStatus.Missed },
        NOW + 61_000,
      ),
    ).toBe(true);
    expect(reads).toEqual([true, false]);
  });

  it("tracks a paused one-off's missed last run for its resume", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 60_000).toISOString(),
    });
    await controlJob(deps, caller, jobId, "pause");
    const run = { jobId, scheduledFor: NOW + 60_000 };
    const tracked: number[] = [];
    deps.runs.trackFinalRun = async (_id, at) => {
      tracked.push(at);
      return true;
    };
    const missed = { final: true, checkAt: undefined, status: RunStatus.Missed } as const;
    expect(await endJobAfter(deps, run, missed, NOW + 61_000)).toBe(false);
    expect(tracked).toEqual([NOW + 60_000]);
  });

  it("reads a job it finds paused, or missing, again consistently: a resume's settling follows its write", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 60_000).toISOString(),
    });
    const current = await deps.jobs.getJob(jobId);
    if (!current) throw new Error("no job");
    // An eventually consistent read still sees the pause a resume just undid.
    const read = deps.jobs.getJob.bind(deps.jobs);
    deps.jobs.getJob = async (id: string, eventual?: boolean) =>
      eventual ? { ...current, status: JobStatus.Paused } : read(id);
    const tracked: number[] = [];
    deps.runs.trackFinalRun = async (_id, at) => {
      tracked.push(at);
      return true;
    };
    const run = { jobId, scheduledFor: NOW + 60_000 };
    expect(await endJobAfter(deps, run, { final: true, tracked: false }, NOW + 61_000)).toBe(true);
    expect(tracked).toEqual([]);
  });
});
