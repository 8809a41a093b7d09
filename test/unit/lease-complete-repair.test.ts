import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS, EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import { NotFoundError, StaleFenceError, ValidationError } from "../../lambdas/core/errors";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { CREATE_SETTLES_MS, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { type MemoryDeps, memoryDeps, watchedRun } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const caller = { tenant: "t", principal: "p" };
/** The worker the tests lease as: it serves the tenants these jobs belong to. */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };

const lease = (deps: MemoryDeps, types = ["x"]) =>
  leaseRuns(deps, worker, { workerId: "w1", types, max: 10 });

/** A job due now whose run was fired and delivered to the (memory) queue. */
async function deliveredRun(deps: MemoryDeps, type = "x") {
  const { jobId } = await createJob(deps, caller, {
    type,
    payload: { n: 1 },
    runAt: new Date(NOW).toISOString(),
  });
  deps.queue.deliverAll();
  return jobId;
}

describe("leaseRuns", () => {
  it("leases a due run with fence 1, its run key and payload, for the lease length", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await deliveredRun(deps);
    const [granted, ...rest] = await lease(deps);
    expect(rest).toHaveLength(0);
    expect(granted).toMatchObject({
      jobId,
      runKey: `${jobId}@2026-11-02T09:00:00Z`,
      attempt: 1,
      fence: 1,
      payload: { n: 1 },
      leaseExpiresAt: new Date(NOW + deps.settings.leaseSeconds * 1000).toISOString().replace(".000", ""),
    });
  });

  it("hands a run that arrives early over at once, its lease counting from its due instant", async () => {
    const deps = memoryDeps(NOW - 2_600);
    await deliveredRun(deps);
    const [granted] = await lease(deps);
    // No waiting in the lease step: the worker holds the run until startAt.
    expect(deps.clock.now()).toBe(NOW - 2_600);
    expect([...deps.runs.runs.values()][0]).toMatchObject({ status: "leased", fence: 1, startedAt: NOW });
    expect(granted?.startAt).toBe(granted?.scheduledFor);
    expect(granted?.leaseExpiresAt).toBe(
      new Date(NOW + deps.settings.leaseSeconds * 1000).toISOString().replace(".000", ""),
    );
  });

  it("starts a run that is already due now: startAt is the lease's start, not the past due time", async () => {
    const deps = memoryDeps(NOW + 3_000);
    await deliveredRun(deps);
    const [granted] = await lease(deps);
    expect(granted?.scheduledFor).toBe("2026-11-02T09:00:00Z");
    expect(granted?.startAt).toBe("2026-11-02T09:00:03Z");
    expect(granted?.leaseExpiresAt).toBe(
      new Date(NOW + 3_000 + deps.settings.leaseSeconds * 1000).toISOString().replace(".000", ""),
    );
  });

  it("answers after one receive: runs due at different instants in one response, each with its own start", async () => {
    const deps = memoryDeps(NOW - 4_000);
    await deliveredRun(deps); // due at NOW
    const { jobId: later } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 3_000).toISOString(),
    });
    deps.queue.deliverAll();
    const granted = await lease(deps);
    expect(deps.queue.receives).toBe(1);
    expect(granted.map((g) => g.startAt).sort()).toEqual(["2026-11-02T09:00:00Z", "2026-11-02T09:00:03Z"]);
    expect(granted.find((g) => g.jobId === later)?.leaseExpiresAt).toBe(
      new Date(NOW + 3_000 + deps.settings.leaseSeconds * 1000).toISOString().replace(".000", ""),
    );
  });

  it("keeps a run leased ahead of a dense second hidden until its lease has lapsed", async () => {
    // Prepare: a run of a dense second shows up 20 s before it is due.
    const deps = memoryDeps(NOW - 20_000);
    await deliveredRun(deps);

    // Act
    const [granted] = await lease(deps);

    // Assess: the receive's visibility covers only a base lead; this one is set to the lease's
    // end (20 s hold + lease) plus a second, in one batched change.
    expect(granted?.startAt).toBe("2026-11-02T09:00:00Z");
    expect(deps.queue.extended).toEqual([
      { receiptHandle: expect.any(String), seconds: 20 + deps.settings.leaseSeconds + 1 },
    ]);
    expect(deps.queue.hides).toBe(1);
  });

  it("leaves a run leased within the base lead with the visibility it was received with", async () => {
    const deps = memoryDeps(NOW - (DELIVERY_LEAD_SECONDS + 1) * 1000);
    await deliveredRun(deps);
    expect(await lease(deps)).toHaveLength(1);
    expect(deps.queue.extended).toEqual([]);
    expect(deps.queue.hides).toBe(0);
  });

  it("puts a run that shows up seconds early back in the queue until it is due", async () => {
    const early = EARLY_HOLD_MS + 2_000; // a repair's resend, say
    const deps = memoryDeps(NOW - early);
    await deliveredRun(deps);
    const message = deps.queue.ready[0]?.message;
    if (!message) throw new Error("no message");
    expect(await lease(deps)).toEqual([]);
    // Hidden until it is back inside the hold window.
    const seconds = early / 1000 - DELIVERY_LEAD_SECONDS;
    expect(deps.queue.extended).toEqual([{ receiptHandle: expect.any(String), seconds }]);
    expect(early - seconds * 1000).toBeLessThanOrEqual(EARLY_HOLD_MS);
    // Nothing written (decision 0051): the run is still the pending, never leased run its
    // message carries, and it is leased as a first attempt once the message is back in time.
    expect(deps.runs.runs.size).toBe(0);
    deps.clock.advance(seconds * 1000);
    deps.queue.ready.push({ message, receiptHandle: "back" });
    expect(await lease(deps)).toMatchObject([{ attempt: 1, fence: 1 }]);
  });

  it("never hands out runs of types the worker did not ask for", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps, "other");
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.ready).toHaveLength(1); // still there for a worker of its type
    expect(await lease(deps, ["other"])).toHaveLength(1);
  });

  it("keeps a second copy of a run someone holds hidden until the lease ends, and drops any copy of a finished run", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await deliveredRun(deps);
    const [first] = await lease(deps);
    deps.queue.ready.push({
      message: { runId: first?.runId ?? "", jobId, scheduledFor: NOW, tenant: "t", type: "x" },
      receiptHandle: "dup",
    });
    expect(await lease(deps)).toEqual([]);
    // It may be the holder's own message shown early: a scheduled run has no repair entry.
    expect(deps.queue.deleted).not.toContain("dup");
    const leaseEnd = Date.parse(first?.leaseExpiresAt ?? "");
    expect(deps.queue.extended).toContainEqual({
      receiptHandle: "dup",
      seconds: Math.ceil((leaseEnd - deps.clock.now()) / 1000) + 1,
    });

    await completeRun(deps, worker, first?.runId ?? "", { fence: first?.fence, result: "succeeded" });
    deps.queue.ready.push({
      message: { runId: first?.runId ?? "", jobId, scheduledFor: NOW, tenant: "t", type: "x" },
      receiptHandle: "late",
    });
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.deleted).toContain("late");
  });

  it("keeps a copy of a held run of a job with an overlap policy hidden until the lease ends too", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      overlapPolicy: "skip",
      runAt: new Date(NOW).toISOString(),
    });
    deps.queue.deliverAll();
    const [first] = await lease(deps);
    deps.queue.ready.push({
      message: { runId: first?.runId ?? "", jobId, scheduledFor: NOW, tenant: "t", type: "x" },
      receiptHandle: "dup-overlap",
    });
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.deleted).not.toContain("dup-overlap");
    expect(deps.queue.extended.map((e) => e.receiptHandle)).toContain("dup-overlap");
  });

  it("drops unreadable messages and messages for runs that do not exist", async () => {
    const deps = memoryDeps(NOW);
    deps.queue.ready.push({ message: undefined, receiptHandle: "garbage" });
    deps.queue.ready.push({
      message: { runId: "r", jobId: "j_x", scheduledFor: 1, tenant: "t", type: "x" },
      receiptHandle: "ghost",
    });
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.deleted).toEqual(expect.arrayContaining(["garbage", "ghost"]));
  });

  it("gives back a run whose job is not stored while its create may finish; then drops it, leaving the run", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await deliveredRun(deps);
    const job = deps.jobs.jobs.get(jobId);
    deps.jobs.jobs.delete(jobId); // as a create that made the run (decision 0048) and has not stored it
    const message = deps.queue.ready[0]?.message;
    if (!job || !message) throw new Error("no job or message");
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.extended).toEqual([expect.objectContaining({ seconds: 1 })]);
    expect(deps.queue.deleted).toEqual([]);
    // Nothing written (decision 0051): the run stays what its message carries, pending.
    expect(deps.runs.runs.size).toBe(0);

    // The create stored it in time: the message, back again, is leased, as a first attempt.
    deps.jobs.jobs.set(jobId, job);
    deps.queue.ready.push({ message, receiptHandle: "again" });
    expect(await lease(deps)).toMatchObject([{ jobId, attempt: 1, fence: 1 }]);

    // Never stored, and the create is long dead: dropped, and nothing written, so no trace of
    // a job never accepted is left; a retry of the create makes the run again.
    const other = memoryDeps(NOW);
    const orphan = await deliveredRun(other);
    other.jobs.jobs.delete(orphan);
    other.clock.advance(CREATE_SETTLES_MS);
    expect(await lease(other)).toEqual([]);
    expect(other.queue.deleted).toHaveLength(1);
    expect(other.runs.runs.size).toBe(0);
  });

  it("gives a lapsed lease to the next worker with a higher fence; the old fence is then refused", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
    const [first] = await lease(deps);
    if (!first) throw new Error("no lease");
    deps.clock.advance(deps.settings.leaseSeconds * 1000); // worker 1 went silent
    deps.queue.ready.push({
      message: { runId: first.runId, jobId: first.jobId, scheduledFor: NOW, tenant: "t", type: "x" },
      receiptHandle: "again",
    });
    const [second] = await lease(deps);
    expect(second).toMatchObject({ runId: first.runId, fence: 2, attempt: 2 });

    await expect(
      completeRun(deps, worker, first.runId, { fence: first.fence, result: "succeeded" }),
    ).rejects.toBeInstanceOf(StaleFenceError);
    expect([...deps.runs.runs.values()][0]?.status).toBe(RunStatus.Leased);
    await completeRun(deps, worker, first.runId, { fence: 2, result: "succeeded" });
    expect([...deps.runs.runs.values()][0]?.status).toBe(RunStatus.Succeeded);
  });

  it("validates the request", async () => {
    const deps = memoryDeps(NOW);
    await expect(leaseRuns(deps, worker, { workerId: "w", types: [], max: 1 })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 101 })).rejects.toMatchObject({
      field: "max",
    });
  });
});

describe("completeRun", () => {
  it("records success, deletes the delivering message and completes the one-off job", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await deliveredRun(deps);
    const [granted] = await lease(deps);
    deps.clock.advance(2_000);
    const result = await completeRun(deps, worker, granted?.runId ?? "", { fence: 1, result: "succeeded" });
    expect(result).toEqual({ runId: granted?.runId, status: "succeeded" });
    expect(deps.queue.deleted).toHaveLength(1);
    const run = [...deps.runs.runs.values()][0];
    expect(run).toMatchObject({
      status: "succeeded",
      startedAt: NOW,
      finishedAt: NOW + 2_000,
      checkAt: undefined,
    });
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("leaves a recurring job active when one of its runs completes", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      interval: { every: "1m" },
      startAt: new Date(NOW + 5_000).toISOString(),
    });
    deps.queue.deliverAll();
    deps.clock.set(NOW + 5_000);
    const [granted] = await lease(deps);
    await completeRun(deps, worker, granted?.runId ?? "", { fence: 1, result: "succeeded" });
    expect([...deps.runs.runs.values()][0]).toMatchObject({ status: "succeeded", final: false });
    expect(await shownStatus(deps, jobId)).toBe("active");
  });

  it("dead-letters a permanent failure at once, with its error", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
    const [granted] = await lease(deps);
    await completeRun(deps, worker, granted?.runId ?? "", {
      fence: 1,
      result: "failed",
      error: "boom",
      retryable: false,
    });
    expect([...deps.runs.runs.values()][0]).toMatchObject({ status: "dead-lettered", error: "boom" });
  });

  it("answers not found for an unknown or malformed run id", async () => {
    const deps = memoryDeps(NOW);
    await expect(completeRun(deps, worker, "nope", { fence: 1, result: "succeeded" })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(
      completeRun(deps, worker, "r_0123456789abcdefghjk_1", { fence: 1, result: "succeeded" }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses a completion of a run that was never leased", async () => {
    // A run made and not written (decision 0051): no item, so no holder: not found, nothing
    // written, and the run is still leased as a first attempt after.
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
    const runId = deps.queue.ready[0]?.message?.runId ?? "";
    await expect(completeRun(deps, worker, runId, { fence: 1, result: "succeeded" })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(
      completeRun(deps, worker, runId, { fence: 1, result: "failed", retryable: false }),
    ).rejects.toBeInstanceOf(NotFoundError);
    expect(deps.runs.runs.size).toBe(0);
    expect(await lease(deps)).toMatchObject([{ runId, attempt: 1, fence: 1 }]);

    // A run written pending and never leased (a manual run): its fence is not the worker's.
    const watched = memoryDeps(NOW);
    await watchedRun(watched, caller);
    const manual = [...watched.runs.runs.values()][0];
    expect(manual).toMatchObject({ status: RunStatus.Pending, fence: 0 });
    await expect(
      completeRun(watched, worker, manual?.runId ?? "", { fence: 1, result: "succeeded" }),
    ).rejects.toBeInstanceOf(StaleFenceError);
    expect([...watched.runs.runs.values()][0]).toMatchObject({ status: RunStatus.Pending, fence: 0 });
  });
});

describe("repairRuns", () => {
  it("re-sends a pending run whose message never turned up, once its check time passed", async () => {
    const deps = memoryDeps(NOW);
    await watchedRun(deps, caller);
    deps.queue.ready.length = 0; // the message is lost
    expect(await repairRuns(deps)).toMatchObject({ resent: 0 });
    deps.clock.advance(deps.settings.repairGraceSeconds * 1000);
    expect(await repairRuns(deps)).toMatchObject({ resent: 1 });
    expect(deps.queue.sent).toHaveLength(1);
    expect(await repairRuns(deps)).toMatchObject({ resent: 0 }); // not again until the next grace period
  });

  it("looks again later at a run whose lease a heartbeat kept alive, without re-sending it", async () => {
    const deps = memoryDeps(NOW);
    await watchedRun(deps, caller);
    const [granted] = await lease(deps);
    const key = [...deps.runs.runs.keys()][0] ?? "";
    const run = deps.runs.runs.get(key);
    if (!run || !granted) throw new Error("no run");
    const extended = NOW + 10 * 60_000;
    deps.runs.runs.set(key, { ...run, leaseExpiresAt: extended }); // heartbeats extended the lease
    deps.clock.set((run.checkAt ?? 0) + 1);
    expect(await repairRuns(deps)).toMatchObject({ resent: 0, rescheduled: 1 });
    expect(deps.runs.runs.get(key)?.checkAt).toBe(extended + deps.settings.repairGraceSeconds * 1000);
  });

  it("after a queue reset re-sends every unfinished run at once, a held one for when its lease ends", async () => {
    const deps = memoryDeps(NOW);
    await watchedRun(deps, caller);
    await watchedRun(deps, caller);
    const [held] = await lease(deps);
    deps.queue.ready.length = 0;
    deps.clock.advance(1_000);
    const stats = await repairRuns(deps, { queueWasReset: true });
    expect(stats).toMatchObject({ inspected: 2, resent: 2 });
    const delays = deps.queue.sent.map((s) => [s.message.runId === held?.runId, s.delaySeconds]);
    // Visible only after the lease has ended: a copy that comes back earlier would be dropped.
    const leaseLeft = Date.parse(held?.leaseExpiresAt ?? "") - deps.clock.now();
    expect(delays).toEqual(expect.arrayContaining([[true, Math.ceil(leaseLeft / 1000) + 1]]));
    expect(leaseLeft).toBeGreaterThan(0);
  });

  it("pages through many candidates in one pass, each once even as re-sent runs move down the index", async () => {
    const deps = memoryDeps(NOW);
    for (let i = 0; i < 250; i++) await watchedRun(deps, caller);
    deps.clock.advance(deps.settings.repairGraceSeconds * 1000);
    expect(await repairRuns(deps)).toMatchObject({ inspected: 250, resent: 250 });
    deps.clock.advance(1_000); // re-sent runs now sort after the ones not yet reached
    expect(await repairRuns(deps, { queueWasReset: true })).toMatchObject({ inspected: 250, resent: 250 });
  });

  it("skips a held run whose check another repair pass moved first", async () => {
    const deps = memoryDeps(NOW);
    await watchedRun(deps, caller);
    await lease(deps);
    deps.clock.advance(deps.settings.leaseSeconds * 1000 - 1);
    const [key, run] = [...deps.runs.runs.entries()][0] ?? [];
    if (!key || !run) throw new Error("no run");
    deps.runs.runs.set(key, { ...run, checkAt: NOW }); // due for a look while the lease still holds
    deps.runs.rescheduleCheck = async () => false;
    expect(await repairRuns(deps)).toMatchObject({ inspected: 1, rescheduled: 0, resent: 0 });
  });
});
