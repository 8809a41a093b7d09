import { describe, expect, it, vi } from "vitest";
import { scheduledRun } from "../../lambdas/core/lifecycle/creation";
import { PAUSED_RUN_REASON, type Run, RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { endJobAfter, settleLastRun } from "../../lambdas/core/use-cases/end-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { markedLast } from "../../lambdas/core/use-cases/unstarted-runs";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

/**
 * Decision 0046: a job completes from its last run only, the run of the firing its last advance
 * recorded (lastFiringAt), not from an earlier run still marked last.
 */
const NOW = Date.UTC(2026, 11, 3, 9, 0, 0);
const MINUTE = 60_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };

/** The copy marked last is received: no lease is handed out, and the run is marked last, `status`. */
async function expectMarkedWithoutLease(deps: MemoryDeps, jobId: string, status: string) {
  expect(await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] })).toEqual([]);
  expect(await deps.runs.getRun(jobId, NOW + 2 * MINUTE)).toMatchObject({ final: true, status });
}

async function oneJob(deps: MemoryDeps) {
  const { jobId } = await createJob(deps, alice, { type: "tick", cron: "* * * * *" });
  const job = await deps.jobs.getJob(jobId);
  if (!job) throw new Error("no job");
  return job;
}

async function fire(deps: MemoryDeps, jobId: string, at: number) {
  deps.clock.set(at);
  const job = await deps.jobs.getJob(jobId);
  if (job?.nextRunAt === undefined) throw new Error("no next run");
  await fireJobs(deps, [{ ...job, nextRunAt: job.nextRunAt }]);
}

/** The run as the scheduler knows it: written, or made and carried by its message (decision 0051). */
function runAt(deps: MemoryDeps, jobId: string, scheduledFor: number): Run {
  const run = knownRunsOf(deps, jobId).find((r) => r.scheduledFor === scheduledFor);
  if (!run) throw new Error(`no run at ${new Date(scheduledFor).toISOString()}`);
  return run;
}

/** The run finished (as its finisher's write leaves it), and its finisher's call to end the job. */
async function finish(deps: MemoryDeps, run: Run): Promise<boolean> {
  const finished = { ...run, status: RunStatus.Succeeded, finishedAt: deps.clock.now() };
  deps.runs.runs.set(`${run.jobId}@${run.scheduledFor}`, finished);
  return endJobAfter(deps, finished, finished, deps.clock.now());
}

describe("a job's last firing", () => {
  it("is the only run that completes its job once a schedule change gave it a later last run", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const { jobId } = await createJob(deps, alice, {
      type: "tick",
      cron: "*/2 * * * *",
      startAt: new Date(NOW).toISOString(),
      endAt: new Date(NOW + 3.5 * MINUTE).toISOString(),
    });
    await fire(deps, jobId, NOW); // one block: 09:00 and 09:02, the last
    expect(runAt(deps, jobId, NOW + 2 * MINUTE).final).toBe(true);
    expect(await deps.jobs.getJob(jobId)).toMatchObject({
      nextRunAt: undefined,
      lastFiringAt: NOW + 2 * MINUTE,
    });

    // Every minute from 09:01:30: 09:02 is kept (the new schedule fires it), 09:03 is the last now.
    deps.clock.set(NOW + 1.5 * MINUTE);
    await updateJob(deps, alice, jobId, { cron: "* * * * *" }, undefined);
    await fire(deps, jobId, NOW + 3 * MINUTE);
    expect(runAt(deps, jobId, NOW + 3 * MINUTE).final).toBe(true);
    expect((await deps.jobs.getJob(jobId))?.lastFiringAt).toBe(NOW + 3 * MINUTE);

    // 09:02 still carries its `final` (its message does, for its first write); its end neither
    // completes the job nor waits in the index.
    expect(await finish(deps, runAt(deps, jobId, NOW + 2 * MINUTE))).toBe(true);
    expect(await shownStatus(deps, jobId)).toBe("active");
    expect(runAt(deps, jobId, NOW + 2 * MINUTE).checkAt).toBeUndefined();

    expect(await finish(deps, runAt(deps, jobId, NOW + 3 * MINUTE))).toBe(true);
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("is not missed when its run exists leased: a create killed before its advance leaves the run to end the job", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      runAt: new Date(NOW + 3_600_000).toISOString(),
      missedRuns: "skip",
    });
    const job = await deps.jobs.getJob(jobId);
    if (!job) throw new Error("no job");
    // The job as a create killed after its run's send and before its advance leaves it, then leased.
    deps.jobs.jobs.set(jobId, {
      ...job,
      schedule: { kind: "once", runAt: NOW },
      nextRunAt: NOW,
      dueKey: undefined,
    });
    const run = scheduledRun(job, NOW, NOW, true);
    await deps.runs.createRun({ ...run, status: RunStatus.Leased, attempt: 1, fence: 1 });

    // The sweep, 45 s late under `skip`, finds the firing running: not a missed last run to end on.
    await fire(deps, jobId, NOW + 45_000);
    expect(await deps.jobs.getJob(jobId)).toMatchObject({
      status: "active",
      nextRunAt: undefined,
      lastFiringAt: NOW,
    });
    expect(await finish(deps, runAt(deps, jobId, NOW))).toBe(true);
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("is the backlog's summary record when a long pause ends past the schedule's end: the job completes", async () => {
    const deps = memoryDeps(NOW - MINUTE);
    const { jobId } = await createJob(deps, alice, {
      type: "tick",
      cron: "* * * * *",
      startAt: new Date(NOW).toISOString(),
      endAt: new Date(NOW + 180 * MINUTE).toISOString(),
      missedRuns: "skip",
    });
    await fire(deps, jobId, NOW - 30_000); // its first block, made ahead: 09:00 to 09:09, none last
    await controlJob(deps, alice, jobId, "pause");
    // No worker ran in the pause: the block's runs are still pending when it is resumed at 13:00.
    deps.clock.set(NOW + 240 * MINUTE);
    await controlJob(deps, alice, jobId, "resume");
    const job = await deps.jobs.getJob(jobId);
    if (job?.status === "active" && job.nextRunAt !== undefined) await fire(deps, jobId, NOW + 240 * MINUTE);
    // The backlog missed, one summary record under 09:00: the block's runs were made and not
    // written (decision 0051), so the record is 09:00's first write, and the job's last: it ends it.
    expect(runAt(deps, jobId, NOW)).toMatchObject({
      status: RunStatus.Missed,
      final: true,
      missedThrough: NOW + 180 * MINUTE,
    });
    expect(deps.runs.runs.get(`${jobId}@${NOW}`)?.status).toBe(RunStatus.Missed); // written, not a message's
    expect(await deps.jobs.getJob(jobId)).toMatchObject({ status: "completed", lastFiringAt: NOW });
    // 09:00's message, received after, finds the record there: it writes nothing and runs nothing.
    const made = deps.queue.sent.find((s) => s.message.scheduledFor === NOW)?.message;
    expect(made?.madeAt).toBeDefined();
    deps.queue.ready.push({ message: made, receiptHandle: "09:00" });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] })).toEqual([]);
    expect(deps.queue.deleted).toEqual(["09:00"]);
    expect(runAt(deps, jobId, NOW)).toMatchObject({ status: RunStatus.Missed, attempt: 0 });
  });

  it("is what a resume re-runs: a run marked last that a schedule change superseded only settles", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      runAt: new Date(NOW + 3_600_000).toISOString(),
    });
    const job = await deps.jobs.getJob(jobId);
    if (!job) throw new Error("no job");
    const stale = {
      ...scheduledRun(job, NOW - MINUTE, NOW - MINUTE, true),
      status: RunStatus.Missed,
      error: PAUSED_RUN_REASON,
      finishedAt: NOW,
      checkAt: NOW,
    };
    await deps.runs.createRun(stale);
    const active = { ...job, nextRunAt: undefined, lastFiringAt: NOW + MINUTE };
    deps.jobs.jobs.set(jobId, active);
    expect(await settleLastRun(deps, active, stale, "resume", NOW)).toBe(true);
    expect(runAt(deps, jobId, NOW - MINUTE)).toMatchObject({ status: "missed", checkAt: undefined });
    expect(deps.queue.sent).toEqual([]);
    expect(await shownStatus(deps, jobId)).toBe("active");
  });

  describe("is one run whichever schedule's copy wrote it first (decision 0046's addendum)", () => {
    /**
     * A bounded cron whose last firing, 09:02, was made by the sweep and recorded, and whose run
     * was written first, not last, by another schedule's copy: a create killed before recording
     * its block, then a schedule change onto the same instant (seed 692325600).
     */
    async function collided(
      written: "pending" | "succeeded" | "leased" | "lapsed",
      options: Record<string, unknown> = {},
      receivedAt = NOW + 2 * MINUTE,
    ) {
      const deps = memoryDeps(NOW - MINUTE);
      const { jobId } = await createJob(deps, alice, {
        type: "tick",
        cron: "*/2 * * * *",
        startAt: new Date(NOW + 2 * MINUTE).toISOString(),
        endAt: new Date(NOW + 3 * MINUTE).toISOString(),
        ...options,
      });
      await fire(deps, jobId, NOW + MINUTE);
      expect(await deps.jobs.getJob(jobId)).toMatchObject({
        nextRunAt: undefined,
        lastFiringAt: NOW + 2 * MINUTE,
      });
      const job = await deps.jobs.getJob(jobId);
      if (!job) throw new Error("no job");
      const old = scheduledRun(job, NOW + 2 * MINUTE, NOW, false);
      const shapes = {
        pending: {},
        leased: { status: RunStatus.Leased, attempt: 1, fence: 1, leaseExpiresAt: NOW + 3 * MINUTE },
        lapsed: { status: RunStatus.Leased, attempt: 1, fence: 1, leaseExpiresAt: NOW + 2 * MINUTE - 1 },
        succeeded: { status: RunStatus.Succeeded, attempt: 1, fence: 1, finishedAt: NOW },
      };
      await deps.runs.createRun({ ...old, ...shapes[written] });
      deps.clock.set(receivedAt);
      // The sweep's copy, which marks it last, is the one received.
      const copy = deps.queue.sent.find((s) => s.message.scheduledFor === NOW + 2 * MINUTE)?.message;
      expect(copy).toMatchObject({ final: true });
      if (copy) deps.queue.ready.push({ message: copy, receiptHandle: "last" });
      return { deps, jobId };
    }

    it("a copy marked last leasing it marks it last, and its end completes the job", async () => {
      const { deps, jobId } = await collided("pending");
      const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] });
      expect(Date.parse(lease?.scheduledFor ?? "")).toBe(NOW + 2 * MINUTE);
      expect(lease?.final).toBe(true);
      expect((await deps.runs.getRun(jobId, NOW + 2 * MINUTE))?.final).toBe(true);
      expect(await finish(deps, runAt(deps, jobId, NOW + 2 * MINUTE))).toBe(true);
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("a copy marked last finding it finished not last marks it and completes the job", async () => {
      const { deps, jobId } = await collided("succeeded");
      await expectMarkedWithoutLease(deps, jobId, "succeeded");
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });
    it("a copy marked last finding it held marks it at once: the holder's end, echoing not last, completes the job", async () => {
      const { deps, jobId } = await collided("leased");
      await expectMarkedWithoutLease(deps, jobId, "leased");
      const runId = runAt(deps, jobId, NOW + 2 * MINUTE).runId;
      await completeRun(deps, worker, runId, { fence: 1, result: "succeeded", final: false });
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("a sweep that makes its last firing and finds that run finished, written not last, ends the job", async () => {
      const { deps, jobId } = await writtenBeforeTheSweep({
        status: RunStatus.Succeeded,
        attempt: 1,
        fence: 1,
        finishedAt: NOW,
      });
      expect(await deps.runs.getRun(jobId, NOW + 2 * MINUTE)).toMatchObject({
        final: true,
        status: "succeeded",
      });
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("costs no write where the copies agree: a last run's own copies never mark it", async () => {
      const deps = memoryDeps(NOW - MINUTE);
      const marks = vi.spyOn(deps.runs, "markLastRun");
      const { jobId } = await createJob(deps, alice, {
        type: "tick",
        cron: "*/2 * * * *",
        startAt: new Date(NOW + 2 * MINUTE).toISOString(),
        endAt: new Date(NOW + 3 * MINUTE).toISOString(),
      });
      await fire(deps, jobId, NOW + MINUTE);
      const copy = deps.queue.sent.find((s) => s.message.scheduledFor === NOW + 2 * MINUTE)?.message;
      if (!copy) throw new Error("no copy");
      deps.clock.set(NOW + 2 * MINUTE);
      // The copy and a duplicate of it: one leases, the other finds it held, then finished.
      deps.queue.ready.push({ message: copy, receiptHandle: "a" }, { message: copy, receiptHandle: "b" });
      const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] });
      await completeRun(deps, worker, lease?.runId ?? "", { fence: 1, result: "succeeded", final: true });
      deps.queue.ready.push({ message: copy, receiptHandle: "c" });
      expect(await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] })).toEqual([]);
      expect(await shownStatus(deps, jobId)).toBe("completed");
      expect(marks).not.toHaveBeenCalled();
    });
    it("a copy marked last finding its job paused records the run missed as the job's last, for the resume", async () => {
      const { deps, jobId } = await collided("pending");
      await controlJob(deps, alice, jobId, "pause");
      expect(await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] })).toEqual([]);
      expect(await deps.runs.getRun(jobId, NOW + 2 * MINUTE)).toMatchObject({
        final: true,
        status: RunStatus.Missed,
        error: PAUSED_RUN_REASON,
      });
    });

    it("a copy marked last arriving past maxLateness records the run missed as the job's last: the job completes", async () => {
      const { deps, jobId } = await collided("pending", { maxLateness: 10 }, NOW + 2 * MINUTE + 30_000);
      await expectMarkedWithoutLease(deps, jobId, "missed");
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("at most once, a copy marked last finding the run's lease lapsed records it lost as the job's last", async () => {
      const { deps, jobId } = await collided("lapsed", { delivery: "at-most-once" });
      await expectMarkedWithoutLease(deps, jobId, "lost");
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("under an overlap policy, a copy marked last finding the run finished marks it and completes the job", async () => {
      const { deps, jobId } = await collided("succeeded", { overlapPolicy: "skip" });
      expect(await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] })).toEqual([]);
      expect(await deps.runs.getRun(jobId, NOW + 2 * MINUTE)).toMatchObject({ final: true });
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("a sweep that makes its last firing and finds that run pending, not last, marks it: its lease then ends the job", async () => {
      const { deps, jobId } = await writtenBeforeTheSweep({});
      expect(await deps.runs.getRun(jobId, NOW + 2 * MINUTE)).toMatchObject({
        final: true,
        status: "pending",
      });
      // Sent again as the written run it is (its message names no `final`: the lease reads it).
      const sent = deps.queue.sent.filter((s) => s.message.scheduledFor === NOW + 2 * MINUTE);
      expect(sent).toHaveLength(1);
      expect(await shownStatus(deps, jobId)).toBe("active");
      deps.clock.set(NOW + 2 * MINUTE);
      for (const { message } of sent) deps.queue.ready.push({ message, receiptHandle: "resent" });
      const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] });
      expect(lease?.final).toBe(true);
      await completeRun(deps, worker, lease?.runId ?? "", { fence: 1, result: "succeeded", final: true });
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    /** A bounded cron whose one firing, 09:02, has its run written before the sweep makes it. */
    async function writtenBeforeTheSweep(run: Partial<Run>) {
      const deps = memoryDeps(NOW - MINUTE);
      const { jobId } = await createJob(deps, alice, {
        type: "tick",
        cron: "*/2 * * * *",
        startAt: new Date(NOW + 2 * MINUTE).toISOString(),
        endAt: new Date(NOW + 3 * MINUTE).toISOString(),
      });
      const job = await deps.jobs.getJob(jobId);
      if (!job) throw new Error("no job");
      await deps.runs.createRun({ ...scheduledRun(job, NOW + 2 * MINUTE, NOW - MINUTE, false), ...run });
      await fire(deps, jobId, NOW + 2 * MINUTE - 10_000);
      return { deps, jobId };
    }

    it("a sweep that makes its last firing and runs again the run a pause kept from starting does not end the job before it", async () => {
      const { deps, jobId } = await writtenBeforeTheSweep({
        status: RunStatus.Missed,
        error: PAUSED_RUN_REASON,
        finishedAt: NOW,
      });
      expect(await deps.runs.getRun(jobId, NOW + 2 * MINUTE)).toMatchObject({
        final: true,
        status: "pending",
      });
      expect(await shownStatus(deps, jobId)).toBe("active");
      const sent = deps.queue.sent.filter((s) => s.message.scheduledFor === NOW + 2 * MINUTE);
      deps.clock.set(NOW + 2 * MINUTE);
      for (const { message } of sent) deps.queue.ready.push({ message, receiptHandle: "rerun" });
      const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] });
      await completeRun(deps, worker, lease?.runId ?? "", { fence: 1, result: "succeeded", final: true });
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("a sweep that finds its last firing's run finished, marked last and out of the repair index (a sweep died before tracking it), ends the job", async () => {
      const { deps, jobId } = await writtenBeforeTheSweep({
        status: RunStatus.Succeeded,
        attempt: 1,
        fence: 1,
        finishedAt: NOW,
        final: true,
      });
      expect(await shownStatus(deps, jobId)).toBe("completed");
    });

    it("marking answers the run as it is when the mark is refused (cancelled meanwhile), or as given when it is gone", async () => {
      const deps = memoryDeps(NOW);
      const run = { ...scheduledRun(await oneJob(deps), NOW, NOW, false) };
      await deps.runs.createRun(run);
      await deps.runs.abandonRun(run.jobId, NOW, "cancelled", "why", NOW, false);
      const cancelled = await deps.runs.getRun(run.jobId, NOW);
      // Read before the cancel, as a racing step would have: the mark is refused, the run read again.
      expect(await markedLast(deps, run, true)).toEqual(cancelled);
      const gone = { ...run, jobId: "j_gone00000000000000", scheduledFor: NOW + 1 };
      expect(await markedLast(deps, gone, true)).toBe(gone);
      const marks = vi.spyOn(deps.runs, "markLastRun");
      expect(await markedLast(deps, run, false)).toBe(run);
      expect(await markedLast(deps, { ...run, final: true }, true)).toMatchObject({ final: true });
      expect(marks).not.toHaveBeenCalled();
    });
  });
});
