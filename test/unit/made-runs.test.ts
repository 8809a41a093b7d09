import { describe, expect, it } from "vitest";
import { RunStatus } from "../../lambdas/core/run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns, STALE_SEED_REASON } from "../../lambdas/core/use-cases/lease-runs";
import { listRuns } from "../../lambdas/core/use-cases/list-jobs";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

/**
 * Runs made and not written (decision 0051): the job records which runs its advances made, so
 * that a view lists them, a pause keeps them in sight and a schedule change or a cancel ends
 * those it does not keep, although no item of theirs exists until their lease.
 */
const NOW = Date.UTC(2026, 11, 2, 9, 0, 0);
const MINUTE = 60_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };
const iso = (at: number) => new Date(at).toISOString().replace(".000", "");

/** An every-minute job from 09:00, its first block (09:00-09:09) made by a sweep at 09:00. */
async function madeBlock(deps: MemoryDeps) {
  const { jobId } = await createJob(deps, alice, {
    type: "tick",
    cron: "* * * * *",
    startAt: new Date(NOW).toISOString(),
  });
  const job = await deps.jobs.getJob(jobId);
  if (job?.nextRunAt === undefined) throw new Error("no next run");
  deps.clock.set(NOW);
  await fireJobs(deps, [{ ...job, nextRunAt: job.nextRunAt }]);
  return jobId;
}

/** Leases every message visible now and completes nothing; answers the runs leased. */
async function leaseAllSent(deps: MemoryDeps) {
  deps.queue.ready.push(
    ...deps.queue.sent
      .splice(0)
      .map((s, i) => ({ message: s.message, receiptHandle: `rh-${i}-${s.message.scheduledFor}` })),
  );
  return leaseRuns(deps, worker, { workerId: "w", types: ["tick"], max: 10, waitSeconds: 0 });
}

describe("runs made and not written", () => {
  it("are recorded on the job as a range, and listed pending, though nothing is written", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await madeBlock(deps);
    expect(deps.runs.runs.size).toBe(0);
    const job = await deps.jobs.getJob(jobId);
    expect(job).toMatchObject({ madeFrom: NOW, madeThrough: NOW + 9 * MINUTE });
    const view = await getJob(deps, alice, jobId);
    expect(view.runs.map((r) => [r.scheduledFor, r.status])).toEqual(
      Array.from({ length: 10 }, (_, i) => [iso(NOW + (9 - i) * MINUTE), RunStatus.Pending]),
    );
  });

  it("stay in sight through a pause, and a schedule change while paused ends those it does not keep", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await madeBlock(deps);
    deps.clock.set(NOW + 30_000);
    await controlJob(deps, alice, jobId, "pause");
    // The pause moves the job's next run back to its next firing; what was made stays made.
    const paused = await getJob(deps, alice, jobId);
    expect(paused.runs.filter((r) => r.status === RunStatus.Pending)).toHaveLength(10);

    await updateJob(deps, alice, jobId, { cron: "*/5 * * * *" }, undefined);
    // 09:05 is fired by the new schedule too: kept, written pending; 09:01-09:04 and 09:06-09:09
    // are superseded, written cancelled. (09:00 was due before the change: it stays as it was.)
    const status = (minute: number) => deps.runs.runs.get(`${jobId}@${NOW + minute * MINUTE}`)?.status;
    expect(status(5)).toBe(RunStatus.Pending);
    for (const minute of [1, 2, 3, 4, 6, 7, 8, 9]) expect(status(minute)).toBe(RunStatus.Cancelled);

    await controlJob(deps, alice, jobId, "resume");
    // Every copy the block's sweep sent comes due: none of the superseded runs is leased.
    deps.clock.set(NOW + 10 * MINUTE);
    const leased = await leaseAllSent(deps);
    expect(
      leased.map((l) => l.scheduledFor).filter((at) => at !== iso(NOW) && at !== iso(NOW + 5 * MINUTE)),
    ).toEqual([]);
  });

  it("are cancelled with their job, each written cancelled, and never leased", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const jobId = await madeBlock(deps);
    deps.clock.set(NOW + 30_000);
    await controlJob(deps, alice, jobId, "cancel");
    const ahead = knownRunsOf(deps, jobId).filter((r) => r.scheduledFor > NOW);
    expect(ahead.map((r) => r.status)).toEqual(Array.from({ length: 9 }, () => RunStatus.Cancelled));
    deps.clock.set(NOW + 10 * MINUTE);
    expect(await leaseAllSent(deps)).toEqual([]);
  });

  it("are paged through with the written ones, newest first, each once, past a block's worth", async () => {
    // An every-minute job whose workers were away for 90 minutes: its sweeps made its runs,
    // and a few of them were leased out of order.
    const deps = memoryDeps(NOW - MINUTE);
    const { jobId } = await createJob(deps, alice, {
      type: "tick",
      cron: "* * * * *",
      startAt: new Date(NOW).toISOString(),
    });
    for (let minute = 0; minute < 90; minute += 10) {
      const job = await deps.jobs.getJob(jobId);
      if (job?.nextRunAt === undefined) throw new Error("no next run");
      deps.clock.set(NOW + minute * MINUTE);
      await fireJobs(deps, [{ ...job, nextRunAt: job.nextRunAt }]);
    }
    const sent = deps.queue.sent.filter((s) =>
      [3, 40, 41, 77].includes((s.message.scheduledFor - NOW) / MINUTE),
    );
    deps.queue.sent.length = 0;
    deps.queue.sent.push(...sent);
    expect(await leaseAllSent(deps)).toHaveLength(4);

    const made = (await deps.jobs.getJob(jobId))?.madeThrough ?? 0;
    const expected = Array.from({ length: (made - NOW) / MINUTE + 1 }, (_, i) => iso(made - i * MINUTE));
    expect(expected.length).toBeGreaterThan(61);
    // Pages of 7 (most hold no written run), and of 1 (pages of written runs, full, each
    // looking at the run before it for a backlog's record).
    for (const limit of ["7", "1"]) {
      const listed: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await listRuns(deps, alice, jobId, { limit, ...(cursor ? { cursor } : {}) });
        expect(page.runs.length).toBeLessThanOrEqual(Number(limit));
        listed.push(...page.runs.map((r) => r.scheduledFor));
        cursor = page.cursor;
      } while (cursor !== undefined);
      expect(listed).toEqual(expected);
    }
    await expect(listRuns(deps, alice, jobId, { cursor: "not-ours" })).rejects.toThrow(/cursor/);
  });

  it("a made run not leased within the run retention is recorded missed, never run; its job ends", async () => {
    const deps = memoryDeps(NOW, { runRetentionDays: 1 });
    const { jobId } = await createJob(deps, alice, {
      type: "tick",
      runAt: new Date(NOW + MINUTE).toISOString(),
    });
    expect(deps.runs.runs.size).toBe(0);
    deps.clock.set(NOW + 2 * 86_400_000);
    expect(await leaseAllSent(deps)).toEqual([]);
    expect(knownRunsOf(deps, jobId)).toMatchObject([
      { status: RunStatus.Missed, error: STALE_SEED_REASON, attempt: 0, final: true },
    ]);
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("a stale last run whose missed record was refused still ends its job before its message goes", async () => {
    const deps = memoryDeps(NOW, { runRetentionDays: 1 });
    const { jobId } = await createJob(deps, alice, {
      type: "tick",
      runAt: new Date(NOW + MINUTE).toISOString(),
    });
    deps.clock.set(NOW + 2 * 86_400_000);
    // The missed record is written, but the step reads a refusal (its answer lost and the
    // retry meeting another outcome): it does not end the job itself.
    const missRun = deps.runs.missRun.bind(deps.runs);
    deps.runs.missRun = async (...args: Parameters<typeof missRun>) => {
      await missRun(...args);
      return undefined;
    };
    // The job's status when the last run's message is deleted (decision 0045: it ends first).
    const statusAtDelete: (string | undefined)[] = [];
    const remove = deps.queue.delete.bind(deps.queue);
    deps.queue.delete = async (handle: string) => {
      statusAtDelete.push(await shownStatus(deps, jobId));
      return remove(handle);
    };
    expect(await leaseAllSent(deps)).toEqual([]);
    expect(knownRunsOf(deps, jobId)).toMatchObject([
      { status: RunStatus.Missed, error: STALE_SEED_REASON, final: true },
    ]);
    expect(statusAtDelete).toEqual(["completed"]);
  });

  it("a seed that names another type than its job's writes nothing", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "tick",
      runAt: new Date(NOW + MINUTE).toISOString(),
    });
    const [sent] = deps.queue.sent.splice(0);
    if (!sent) throw new Error("no message");
    deps.clock.set(NOW + MINUTE);
    deps.queue.ready.push({ message: { ...sent.message, type: "other" }, receiptHandle: "forged" });
    expect(
      await leaseRuns(deps, worker, { workerId: "w", types: ["other"], max: 10, waitSeconds: 0 }),
    ).toEqual([]);
    expect(deps.runs.runs.size).toBe(0);
    // Its own message still leases it.
    deps.queue.ready.push({ message: sent.message, receiptHandle: "own" });
    const leased = await leaseRuns(deps, worker, { workerId: "w", types: ["tick"], max: 10, waitSeconds: 0 });
    expect(leased.map((l) => l.jobId)).toEqual([jobId]);
  });
});
