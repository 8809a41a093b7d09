import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS, EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import { NotFoundError, StaleFenceError, ValidationError } from "../../lambdas/core/errors";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

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

  it("holds a run that arrives less than a second early until its due instant, never starting it early", async () => {
    const deps = memoryDeps(NOW - 800);
    await deliveredRun(deps);
    const [granted] = await lease(deps);
    expect(deps.clock.now()).toBe(NOW);
    expect([...deps.runs.runs.values()][0]?.startedAt).toBe(NOW);
    expect(granted?.leaseExpiresAt).toBe(
      new Date(NOW + deps.settings.leaseSeconds * 1000).toISOString().replace(".000", ""),
    );
  });

  it("grants the lease of a run that arrives early at once, hands it over on its due instant", async () => {
    const deps = memoryDeps(NOW - 2_600);
    await deliveredRun(deps);
    const granting = lease(deps);
    const [granted] = await granting;
    const run = [...deps.runs.runs.values()][0];
    expect(run).toMatchObject({ status: "leased", fence: 1, startedAt: NOW });
    expect(deps.clock.now()).toBe(NOW);
    expect(granted?.leaseExpiresAt).toBe(
      new Date(NOW + deps.settings.leaseSeconds * 1000).toISOString().replace(".000", ""),
    );
  });

  it("keeps gathering runs while its hand-over is more than a poll away, up to max", async () => {
    const deps = memoryDeps(NOW - 2_900);
    for (let i = 0; i < 5; i++) await deliveredRun(deps);
    deps.queue.perReceive = 1; // the spike's messages become visible one at a time
    const granted = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 4 });
    expect(granted).toHaveLength(4);
    expect(deps.queue.receives).toBe(4);
    expect(deps.queue.ready).toHaveLength(1);
  });

  it("stops gathering when the hand-over is less than a poll away", async () => {
    const quiet = memoryDeps(NOW - 2_900);
    await deliveredRun(quiet);
    expect(await leaseRuns(quiet, worker, { workerId: "w", types: ["x"], max: 4 })).toHaveLength(1);
    // Two one-second polls brought nothing more; then the hand-over was too close for another.
    expect(quiet.queue.receives).toBe(3);
    expect(quiet.clock.now()).toBe(NOW);

    const close = memoryDeps(NOW - 1_000);
    for (let i = 0; i < 3; i++) await deliveredRun(close);
    close.queue.perReceive = 1;
    expect(await leaseRuns(close, worker, { workerId: "w", types: ["x"], max: 4 })).toHaveLength(1);
    expect(close.queue.receives).toBe(1);
  });

  it("releases a later run that is due within two seconds at once", async () => {
    const deps = memoryDeps(NOW - 500);
    await deliveredRun(deps); // due at NOW
    await createJob(deps, caller, { type: "x", runAt: new Date(NOW + 800).toISOString() });
    deps.queue.deliverAll();
    expect(await lease(deps)).toHaveLength(1);
    expect(deps.queue.released).toHaveLength(1);
    expect(deps.queue.extended).toEqual([]);
  });

  it("sends runs due noticeably after a batch's earliest back for another request", async () => {
    const deps = memoryDeps(NOW - 2_000);
    await deliveredRun(deps); // due at NOW
    const { jobId: later } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW + 800).toISOString(),
    });
    deps.queue.deliverAll();
    const granted = await lease(deps);
    expect(granted.map((g) => g.jobId)).not.toContain(later);
    expect(granted).toHaveLength(1);
    // Hidden until about a second before it is due (2.8 s away: back in 1 s), not released
    // at once for every gathering request to receive and send back again.
    expect(deps.queue.extended).toEqual([{ receiptHandle: expect.any(String), seconds: 1 }]);
    expect(deps.queue.released).toHaveLength(0);
    expect(deps.clock.now()).toBe(NOW);
    // It stopped gathering there: its next poll would only have brought the same run back.
    expect(deps.queue.receives).toBe(1);
  });

  it("hands a run that shows up mid-gathering but is due first over on its own time, taking the batch's lease back", async () => {
    // Prepare: C due at NOW is visible at once; B, due 3 s before C, shows up a poll later
    // (another request had hidden it until just before it is due).
    const deps = memoryDeps(NOW - 5_000);
    const { jobId: c } = await createJob(deps, caller, { type: "x", runAt: new Date(NOW).toISOString() });
    deps.queue.deliverAll();
    const { jobId: b } = await createJob(deps, caller, {
      type: "x",
      runAt: new Date(NOW - 3_000).toISOString(),
    });
    deps.queue.onEmptyWait = (seconds) => {
      deps.clock.advance(seconds * 1000);
      deps.queue.deliverAll();
    };

    // Act
    const granted = await lease(deps);

    // Assess: B on its due instant, not held for C; C pending again, its message hidden until
    // about a second before it is due, its attempt not counted.
    expect(granted.map((g) => g.jobId)).toEqual([b]);
    expect(deps.clock.now()).toBe(NOW - 3_000);
    const runOf = (jobId: string) => [...deps.runs.runs.values()].find((r) => r.jobId === jobId);
    expect(runOf(c)).toMatchObject({ status: "pending", attempt: 0, fence: 1, startedAt: undefined });
    expect(runOf(b)).toMatchObject({ status: "leased", startedAt: NOW - 3_000 });
    expect(deps.queue.extended).toContainEqual({ receiptHandle: expect.any(String), seconds: 3 }); // 4 s ahead

    // C is leased again when it comes back, with a higher fence.
    deps.clock.set(NOW - 1_000);
    deps.queue.ready.push({
      message: {
        runId: runOf(c)?.runId ?? "",
        jobId: c,
        scheduledFor: NOW,
        tenant: caller.tenant,
        type: "x",
      },
      receiptHandle: "c-again",
    });
    expect(await lease(deps)).toMatchObject([{ jobId: c, fence: 2, attempt: 1 }]);
  });

  it("puts a run that shows up seconds early back in the queue until it is due", async () => {
    const early = EARLY_HOLD_MS + 2_000; // a repair's resend, say
    const deps = memoryDeps(NOW - early);
    await deliveredRun(deps);
    expect(await lease(deps)).toEqual([]);
    // Hidden until it is back inside the hold window.
    const seconds = early / 1000 - DELIVERY_LEAD_SECONDS;
    expect(deps.queue.extended).toEqual([{ receiptHandle: expect.any(String), seconds }]);
    expect(early - seconds * 1000).toBeLessThanOrEqual(EARLY_HOLD_MS);
    expect([...deps.runs.runs.values()][0]?.status).toBe("pending");
  });

  it("never hands out runs of types the worker did not ask for", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps, "other");
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.ready).toHaveLength(1); // still there for a worker of its type
    expect(await lease(deps, ["other"])).toHaveLength(1);
  });

  it("drops a second copy of a run someone holds, and any copy of a finished run", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await deliveredRun(deps);
    const [first] = await lease(deps);
    deps.queue.ready.push({
      message: { runId: first?.runId ?? "", jobId, scheduledFor: NOW, tenant: "t", type: "x" },
      receiptHandle: "dup",
    });
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.deleted).toContain("dup");

    await completeRun(deps, worker, first?.runId ?? "", { fence: first?.fence, result: "succeeded" });
    deps.queue.ready.push({
      message: { runId: first?.runId ?? "", jobId, scheduledFor: NOW, tenant: "t", type: "x" },
      receiptHandle: "late",
    });
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.deleted).toContain("late");
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

  it("cancels the run of a job that no longer exists instead of leasing it", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await deliveredRun(deps);
    deps.jobs.jobs.delete(jobId);
    expect(await lease(deps)).toEqual([]);
    expect([...deps.runs.runs.values()][0]?.status).toBe(RunStatus.Cancelled);
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
    expect((await deps.jobs.getJob(jobId))?.status).toBe("completed");
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
    expect((await deps.jobs.getJob(jobId))?.status).toBe("active");
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
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
    const runId = [...deps.runs.runs.values()][0]?.runId ?? "";
    await expect(completeRun(deps, worker, runId, { fence: 1, result: "succeeded" })).rejects.toBeInstanceOf(
      StaleFenceError,
    );
  });
});

describe("repairRuns", () => {
  it("re-sends a pending run whose message never turned up, once its check time passed", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
    deps.queue.ready.length = 0; // the message is lost
    expect(await repairRuns(deps)).toMatchObject({ resent: 0 });
    deps.clock.advance(deps.settings.repairGraceSeconds * 1000);
    expect(await repairRuns(deps)).toMatchObject({ resent: 1 });
    expect(deps.queue.sent).toHaveLength(1);
    expect(await repairRuns(deps)).toMatchObject({ resent: 0 }); // not again until the next grace period
  });

  it("looks again later at a run whose lease a heartbeat kept alive, without re-sending it", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
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
    await deliveredRun(deps);
    await deliveredRun(deps);
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
    for (let i = 0; i < 250; i++) await deliveredRun(deps);
    deps.clock.advance(deps.settings.repairGraceSeconds * 1000);
    expect(await repairRuns(deps)).toMatchObject({ inspected: 250, resent: 250 });
    deps.clock.advance(1_000); // re-sent runs now sort after the ones not yet reached
    expect(await repairRuns(deps, { queueWasReset: true })).toMatchObject({ inspected: 250, resent: 250 });
  });

  it("skips a held run whose check another repair pass moved first", async () => {
    const deps = memoryDeps(NOW);
    await deliveredRun(deps);
    await lease(deps);
    deps.clock.advance(deps.settings.leaseSeconds * 1000 - 1);
    const [key, run] = [...deps.runs.runs.entries()][0] ?? [];
    if (!key || !run) throw new Error("no run");
    deps.runs.runs.set(key, { ...run, checkAt: NOW }); // due for a look while the lease still holds
    deps.runs.rescheduleCheck = async () => false;
    expect(await repairRuns(deps)).toMatchObject({ inspected: 1, rescheduled: 0, resent: 0 });
  });
});
