import { describe, expect, it } from "vitest";
import { retryDelayMs } from "../../lambdas/core/backoff";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import { ConflictError, NotFoundError, StaleFenceError, ValidationError } from "../../lambdas/core/errors";
import { PAUSED_RUN_REASON, RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import {
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../../lambdas/core/use-cases/dead-letters";
import { heartbeatRun } from "../../lambdas/core/use-cases/heartbeat-run";
import { leaseRuns, RECYCLE_AFTER_RECEIVES } from "../../lambdas/core/use-cases/lease-runs";
import { runTick } from "../../lambdas/core/use-cases/tick";
import { RUN_QUEUE } from "../../lambdas/definitions/queues";
import { knownRunsOf } from "../support/known-runs";
import { dueRun as dueRunOf, type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "a", principal: "arn:aws:iam::1:user/alice" };
const bob = { tenant: "b", principal: "arn:aws:iam::1:user/bob" };
/** The worker the tests lease as: it serves the tenants these jobs belong to. */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["a", "b"] };

const dueRun = (deps: MemoryDeps, extra: Record<string, unknown> = {}, caller = alice) =>
  dueRunOf(deps, extra, caller);

async function leaseOne(deps: MemoryDeps) {
  const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
  if (!lease) throw new Error("nothing leased");
  return lease;
}

/** A one-off run with one attempt, leased once by a worker that died: its message back as "again". */
async function leasedOnceAndLapsed(deps: MemoryDeps): Promise<string> {
  const jobId = await dueRun(deps, { maxAttempts: 1 });
  const first = await leaseOne(deps);
  deps.clock.advance(deps.settings.leaseSeconds * 1000 + 1_000); // the worker died
  deps.queue.ready.push({
    message: { runId: first.runId, jobId: first.jobId, scheduledFor: NOW, tenant: "a", type: "x" },
    receiptHandle: "again",
  });
  return jobId;
}

const fail = (deps: MemoryDeps, lease: { runId: string; fence: number }, retryable = true) =>
  completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "failed", retryable, error: "boom" });

const theRun = (deps: MemoryDeps) => {
  const run = [...deps.runs.runs.values()][0];
  if (!run) throw new Error("no run");
  return run;
};

describe("retries", () => {
  it("puts a retryable failure back to pending after the job's backoff, and re-sends it with that delay", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { retry: { base: "PT20S", cap: "PT10M" } });
    const lease = await leaseOne(deps);
    deps.queue.sent.length = 0;
    const result = await fail(deps, lease);
    const delay = retryDelayMs(1, { baseMs: 20_000, capMs: 600_000 }, () => 0.5);
    expect(delay).toBe(15_000); // equal jitter: half certain, half random
    expect(result).toEqual({ runId: lease.runId, status: "retrying", retryAt: "2026-11-02T09:00:15Z" });
    expect(theRun(deps)).toMatchObject({
      status: "pending",
      retryAt: NOW + delay,
      error: "boom",
      attempt: 1,
    });
    expect(deps.queue.sent).toEqual([
      {
        message: expect.objectContaining({ runId: lease.runId, notBefore: NOW + delay }),
        delaySeconds: delay / 1000 - DELIVERY_LEAD_SECONDS,
      },
    ]);
    expect(deps.queue.deleted).toHaveLength(1); // the first attempt's message
  });

  it("does not lease a retry before its time, even from an early copy; then leases it with a higher fence", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps);
    const first = await leaseOne(deps);
    await fail(deps, first);
    // A stale copy of the first message shows up now: the retry is not due, so it is dropped.
    deps.queue.ready.push({
      message: { runId: first.runId, jobId: first.jobId, scheduledFor: NOW, tenant: "a", type: "x" },
      receiptHandle: "stale",
    });
    const early = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(early).toEqual([]);
    expect(deps.queue.deleted).toContain("stale");
    const retryAt = theRun(deps).retryAt ?? 0;
    deps.queue.deliverAll(); // the retry's own message, with notBefore
    deps.clock.set(retryAt - 2_000); // visible a little early, as SQS delays deliver it
    const second = await leaseOne(deps);
    // Handed over at once, to be started on the retry's instant.
    expect(deps.clock.now()).toBe(retryAt - 2_000);
    expect(Date.parse(second.startAt)).toBe(retryAt);
    expect(second).toMatchObject({ runKey: first.runKey, attempt: 2, fence: 2 });
  });

  it("hides a retry that shows up long before its time until it is nearly due", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps);
    const first = await leaseOne(deps);
    deps.queue.ready.push({
      message: {
        runId: first.runId,
        jobId: first.jobId,
        scheduledFor: NOW,
        tenant: "a",
        type: "x",
        notBefore: NOW + 3_600_000,
      },
      receiptHandle: "far",
    });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(deps.queue.extended).toContainEqual({
      receiptHandle: "far",
      seconds: 3_600 - DELIVERY_LEAD_SECONDS,
    });
  });

  it("dead-letters on the last attempt with the last error, and at once for retryable: false", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { maxAttempts: 2 });
    await fail(deps, await leaseOne(deps));
    deps.clock.set(theRun(deps).retryAt ?? 0);
    deps.queue.deliverAll();
    const result = await fail(deps, await leaseOne(deps));
    expect(result.status).toBe("dead-lettered");
    expect(theRun(deps)).toMatchObject({
      status: "dead-lettered",
      error: "boom (attempt 2 of 2)",
      attempt: 2,
    });

    const permanent = memoryDeps(NOW);
    const permanentJob = await dueRun(permanent);
    expect((await fail(permanent, await leaseOne(permanent), false)).status).toBe("dead-lettered");
    expect(theRun(permanent)).toMatchObject({ status: "dead-lettered", error: "boom", attempt: 1 });
    // Its last run is finished, so the one-off job is too: nothing more will be scheduled.
    expect(await shownStatus(permanent, permanentJob)).toBe("completed");
  });

  it("dead-letters a run whose leases all lapsed instead of handing it out again", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await leasedOnceAndLapsed(deps);
    expect(await leaseRuns(deps, worker, { workerId: "w2", types: ["x"], max: 10 })).toEqual([]);
    expect(theRun(deps)).toMatchObject({
      status: "dead-lettered",
      error: "1 lease(s) lapsed without a completion",
    });
    expect(deps.queue.deleted).toContain("again");
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("ends the job of a last run whose dead letter by lapses was refused, before its message goes", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await leasedOnceAndLapsed(deps);
    // The dead letter is written, but the step reads a refusal (as after a lost answer whose
    // retry met another outcome): it does not end the job itself.
    const finishRun = deps.runs.finishRun.bind(deps.runs);
    deps.runs.finishRun = async (...args: Parameters<typeof finishRun>) => {
      await finishRun(...args);
      return undefined;
    };
    expect(await leaseRuns(deps, worker, { workerId: "w2", types: ["x"], max: 10 })).toEqual([]);
    expect(theRun(deps)).toMatchObject({ status: "dead-lettered" });
    // The last run's message ends its job before it is deleted (decision 0045).
    expect(deps.queue.deleted).toContain("again");
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });
});

describe("maxLateness at the lease", () => {
  it("records a run that could only start later than its job's maxLateness as missed, and ends the job", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, { maxLateness: 5 });
    deps.clock.advance(6_000); // the message was held up (an outage): 6 s late
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(theRun(deps)).toMatchObject({
      status: "missed",
      attempt: 0,
      error: "more than maxLateness (5 s) late when it could start",
    });
    expect(await shownStatus(deps, jobId)).toBe("completed");
    expect(deps.queue.deleted).toHaveLength(1);
  });

  it("starts a run within its maxLateness, and never misses a retry or a replay however late", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { maxLateness: 5, retry: { base: 60, cap: 60 } });
    deps.clock.advance(4_000);
    const first = await leaseOne(deps); // 4 s late: within it
    await fail(deps, first);
    deps.clock.set(theRun(deps).retryAt ?? 0);
    deps.clock.advance(10_000);
    deps.queue.deliverAll();
    const retry = await leaseOne(deps); // long after the scheduled instant: a retry still runs
    expect(retry).toMatchObject({ attempt: 2 });
    await fail(deps, retry, false);
    await replayDeadLetter(deps, alice, retry.runId);
    deps.clock.advance(60_000);
    deps.queue.deliverAll();
    expect(await leaseOne(deps)).toMatchObject({ runId: retry.runId, attempt: 1 });
  });
});

describe("fences and the run state machine", () => {
  it("answers a repeated completion as the first time; refuses another result or an old fence, changing nothing", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps);
    const lease = await leaseOne(deps);
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    const before = theRun(deps);
    // The worker's retry after a lost answer: same fence, same result.
    expect(await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" })).toEqual(
      {
        runId: lease.runId,
        status: "succeeded",
      },
    );
    await expect(fail(deps, lease)).rejects.toBeInstanceOf(StaleFenceError);
    await expect(
      completeRun(deps, worker, lease.runId, { fence: 7, result: "failed" }),
    ).rejects.toMatchObject({
      field: "fence",
    });
    expect(theRun(deps)).toEqual(before);
  });

  it("answers repeated failures with the recorded retry or dead letter, until a newer lease exists", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { maxAttempts: 2, retry: { base: 1, cap: 1 } });
    const first = await leaseOne(deps);
    const retrying = await fail(deps, first);
    expect(retrying.status).toBe("retrying");
    expect(await fail(deps, first)).toEqual(retrying);
    await expect(
      completeRun(deps, worker, first.runId, { fence: first.fence, result: "succeeded" }),
    ).rejects.toBeInstanceOf(StaleFenceError);

    deps.clock.advance(2_000);
    deps.queue.deliverAll();
    const second = await leaseOne(deps);
    await expect(fail(deps, first)).rejects.toBeInstanceOf(StaleFenceError); // fence 1 no longer holds it
    expect(await fail(deps, second)).toMatchObject({ status: "dead-lettered" });
    expect(await fail(deps, second)).toMatchObject({ status: "dead-lettered" });
    expect(theRun(deps)).toMatchObject({ status: "dead-lettered", attempt: 2 });
  });

  it("ends a one-off with its run's record: a crash before the job could be marked loses nothing (decision 0057)", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps);
    const lease = await leaseOne(deps);
    const run = theRun(deps);
    await deps.runs.finishRun(run.jobId, run.scheduledFor, lease.fence, {
      status: RunStatus.Succeeded,
      error: undefined,
      now: NOW,
      final: true,
    });
    // The crash: nothing wrote the job, which is ended all the same.
    expect((await deps.jobs.getJob(jobId))?.status).toBe("active");
    expect(await shownStatus(deps, jobId)).toBe("completed");

    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("lets a run leased before its job was cancelled finish; the job stays cancelled", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps);
    const lease = await leaseOne(deps);
    await controlJob(deps, alice, jobId, "cancel");
    expect(
      await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" }),
    ).toMatchObject({
      status: "succeeded",
    });
    expect(await shownStatus(deps, jobId)).toBe("cancelled");
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" }); // a repeat
    expect(await shownStatus(deps, jobId)).toBe("cancelled");
  });

  it("answers 404 for a failure report on a run that does not exist", async () => {
    const deps = memoryDeps(NOW);
    await expect(fail(deps, { runId: "r_0000000000000000000a_1", fence: 1 })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe("heartbeats", () => {
  it("extend a live lease by the job's lease length, in the store and on the message", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { leaseSeconds: 60 });
    const lease = await leaseOne(deps);
    deps.clock.advance(20_000);
    const beat = await heartbeatRun(deps, worker, lease.runId, { fence: lease.fence });
    expect(beat).toEqual({ runId: lease.runId, fence: 1, leaseExpiresAt: "2026-11-02T09:01:20Z" });
    expect(theRun(deps).leaseExpiresAt).toBe(NOW + 80_000);
    expect(deps.queue.extended.at(-1)).toEqual({ receiptHandle: expect.any(String), seconds: 61 });
  });

  it("are refused with an old fence or after the lease lapsed, and for unknown runs", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps);
    const lease = await leaseOne(deps);
    await expect(heartbeatRun(deps, worker, lease.runId, { fence: 9 })).rejects.toBeInstanceOf(
      StaleFenceError,
    );
    deps.clock.advance(deps.settings.leaseSeconds * 1000);
    await expect(heartbeatRun(deps, worker, lease.runId, { fence: lease.fence })).rejects.toMatchObject({
      field: "fence",
    });
    await expect(heartbeatRun(deps, worker, "r_nope", { fence: 1 })).rejects.toBeInstanceOf(NotFoundError);
    await expect(heartbeatRun(deps, worker, lease.runId, { fence: 0 })).rejects.toBeInstanceOf(
      ValidationError,
    );
  });

  it("still count when the message cannot be extended: the store holds the lease", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps);
    const lease = await leaseOne(deps);
    deps.queue.extend = async () => {
      throw new Error("receipt handle expired");
    };
    await expect(heartbeatRun(deps, worker, lease.runId, { fence: 1 })).resolves.toMatchObject({ fence: 1 });
    expect(deps.warnings).toContain("could not extend the run's message");
  });
});

describe("dead letters", () => {
  async function deadLetter(deps: MemoryDeps, caller = alice) {
    await dueRun(deps, {}, caller);
    const lease = await leaseOne(deps);
    await fail(deps, lease, false);
    return lease;
  }

  it("are listed to their own tenant only, with the last error", async () => {
    const deps = memoryDeps(NOW);
    const mine = await deadLetter(deps);
    await deadLetter(deps, bob);
    const list = await listDeadLetters(deps, alice, {});
    expect(list.deadLetters).toEqual([
      expect.objectContaining({ runId: mine.runId, status: "dead-lettered", error: "boom", replays: 0 }),
    ]);
    expect((await runTick(deps)).deadLetters).toBe(2);
  });

  it("replay runs again under the same run key with attempts reset, the replay counted", async () => {
    const deps = memoryDeps(NOW);
    const first = await deadLetter(deps);
    deps.queue.sent.length = 0;
    const replayed = await replayDeadLetter(deps, alice, first.runId);
    expect(replayed).toMatchObject({
      runId: first.runId,
      status: "pending",
      attempt: 0,
      replays: 1,
      error: "boom",
    });
    expect(theRun(deps)).toMatchObject({ replayedBy: alice.principal, replayedAt: NOW });
    expect(deps.queue.sent).toEqual([
      { message: expect.objectContaining({ runId: first.runId }), delaySeconds: 0 },
    ]);
    deps.queue.deliverAll();
    const again = await leaseOne(deps); // the job is completed: a replay still runs
    expect(again).toMatchObject({ runKey: first.runKey, attempt: 1, fence: 2 });
    expect((await listDeadLetters(deps, alice, {})).deadLetters).toEqual([]);
    expect(await completeRun(deps, worker, again.runId, { fence: 2, result: "succeeded" })).toMatchObject({
      status: "succeeded",
    });
  });

  it("cannot be replayed by another tenant, twice, or when not dead-lettered", async () => {
    const deps = memoryDeps(NOW);
    const first = await deadLetter(deps);
    await expect(replayDeadLetter(deps, bob, first.runId)).rejects.toBeInstanceOf(NotFoundError);
    await replayDeadLetter(deps, alice, first.runId);
    await expect(replayDeadLetter(deps, alice, first.runId)).rejects.toMatchObject({ field: "runId" });
    await expect(replayDeadLetter(deps, alice, "junk")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("replay all replays every one of the tenant's dead letters and no one else's", async () => {
    const deps = memoryDeps(NOW);
    for (let i = 0; i < 3; i++) await deadLetter(deps);
    await deadLetter(deps, bob);
    expect(await replayAllDeadLetters(deps, alice)).toEqual({
      replayed: 3,
      skippedPaused: 0,
      complete: true,
    });
    expect((await listDeadLetters(deps, bob, {})).deadLetters).toHaveLength(1);
    expect([...deps.runs.runs.values()].filter((r) => r.status === RunStatus.Pending)).toHaveLength(3);
  });
});

describe("per-tenant rate limit", () => {
  it("delays runs over a tenant's limit by a second and never drops them", async () => {
    const deps = memoryDeps(NOW, { tenantRunsPerSecond: 2 });
    const jobIds: string[] = [];
    for (let i = 0; i < 5; i++) jobIds.push(await dueRun(deps));
    jobIds.push(await dueRun(deps, {}, bob));
    const received = [...deps.queue.ready];
    const leased = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(leased).toHaveLength(3); // 2 of alice's, 1 of bob's
    // Only the leased runs are written (a made run's lease writes it first, decision 0051).
    expect([...deps.runs.runs.values()].map((r) => [r.jobId, r.status]).sort()).toEqual(
      leased.map((l) => [l.jobId, RunStatus.Leased]).sort(),
    );
    // The three others are delayed a second, not dropped: their messages come back, each still
    // carrying its run pending, never leased.
    const delayed = new Set(deps.queue.extended.filter((e) => e.seconds === 1).map((e) => e.receiptHandle));
    const back = received.filter((r) => delayed.has(r.receiptHandle));
    expect(back).toHaveLength(3);
    expect(deps.queue.deleted).toEqual([]);
    deps.queue.ready.push(...back);
    const waiting = jobIds.filter((id) => !leased.some((l) => l.jobId === id));
    for (const id of waiting) {
      expect(knownRunsOf(deps, id)).toMatchObject([{ status: RunStatus.Pending, fence: 0, attempt: 0 }]);
    }
  });

  it("sends a run held back so often that its lane would dead-letter it as a fresh copy instead", async () => {
    const deps = memoryDeps(NOW, { tenantRunsPerSecond: 1 });
    for (let i = 0; i < 3; i++) await dueRun(deps);
    // SQS's receive counts: the first two messages have been held back many times already.
    const [a, b, c] = deps.queue.ready.splice(0);
    if (!a || !b || !c) throw new Error("no messages");
    deps.queue.ready.push(
      { ...a, receiveCount: 2 },
      { ...b, receiveCount: RECYCLE_AFTER_RECEIVES },
      { ...c, receiveCount: RECYCLE_AFTER_RECEIVES - 1 },
    );
    const leased = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(leased.map((l) => l.runId)).toEqual([a.message?.runId]);
    // b: a fresh copy, visible at once (a worn message is not leased: decision 0045), the worn
    // one deleted; c: hidden a second, as before.
    expect(deps.queue.sent.map((s) => [s.message.runId, s.delaySeconds])).toEqual([[b.message?.runId, 0]]);
    expect(deps.queue.deleted).toEqual([b.receiptHandle]);
    expect(deps.queue.extended).toEqual([{ receiptHandle: c.receiptHandle, seconds: 1 }]);
    expect(RECYCLE_AFTER_RECEIVES).toBeLessThan(RUN_QUEUE.deadLetter.maxReceiveCount);
  });

  it("recycles a run's message worn by lapsed leases before SQS would dead-letter it, and leases the copy", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { maxAttempts: 100, leaseSeconds: 30 });
    const [message] = deps.queue.ready.splice(0);
    if (!message) throw new Error("no message");
    // Its leases lapsed again and again: SQS has handed the message out that many times.
    deps.queue.ready.push({ ...message, receiveCount: RECYCLE_AFTER_RECEIVES });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(deps.queue.deleted).toEqual([message.receiptHandle]);
    expect(deps.queue.sent.map((s) => s.delaySeconds)).toEqual([0]);
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(lease?.runId).toBe(message.message?.runId);
  });
});

describe("resuming a job whose last run exists", () => {
  const runOf = (deps: MemoryDeps) => [...deps.runs.runs.values()][0];

  it("runs the one-off's run that the pause kept from starting, under the same run key", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps);
    await controlJob(deps, alice, jobId, "pause");
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(runOf(deps)).toMatchObject({ status: RunStatus.Missed, error: PAUSED_RUN_REASON });
    deps.queue.sent.length = 0;
    const resumed = await controlJob(deps, alice, jobId, "resume");
    expect(resumed).toMatchObject({ status: "active" });
    expect(runOf(deps)).toMatchObject({ status: RunStatus.Pending, attempt: 0 });
    expect(deps.queue.sent.map((s) => [s.message.runId, s.delaySeconds])).toEqual([[runOf(deps)?.runId, 0]]);
    deps.queue.deliverAll();
    const lease = await leaseOne(deps);
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("completes it instead under missedRuns skip, and when its last run ended during the pause", async () => {
    const skipping = memoryDeps(NOW);
    const skipped = await dueRun(skipping, { missedRuns: "skip" });
    await controlJob(skipping, alice, skipped, "pause");
    await leaseRuns(skipping, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(await controlJob(skipping, alice, skipped, "resume")).toMatchObject({ status: "completed" });
    expect(runOf(skipping)?.status).toBe(RunStatus.Missed);

    const ended = memoryDeps(NOW);
    const jobId = await dueRun(ended);
    const lease = await leaseOne(ended);
    await controlJob(ended, alice, jobId, "pause");
    await completeRun(ended, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect(await shownStatus(ended, jobId)).toBe("paused");
    expect(await controlJob(ended, alice, jobId, "resume")).toMatchObject({ status: "completed" });
  });

  it("leaves a job whose last run is still to come to that run", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps);
    await controlJob(deps, alice, jobId, "pause");
    deps.queue.sent.length = 0;
    const resumed = await controlJob(deps, alice, jobId, "resume");
    expect(resumed).toMatchObject({ status: "active", runs: [{ status: "pending" }] });
    expect(deps.queue.sent).toEqual([]);
    // Its run is still the one its message carries (made, not written: decision 0051), pending.
    expect(runOf(deps)).toBeUndefined();
    expect(knownRunsOf(deps, jobId)).toMatchObject([{ status: RunStatus.Pending, attempt: 0 }]);
    // And that run carries the job to its end.
    const lease = await leaseOne(deps);
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });
});

describe("dead letters of a paused job", () => {
  it("are not replayed (409) and are skipped by replay-all until the job is resumed", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, {
      interval: { every: "1h" },
      runAt: undefined,
      startAt: new Date(NOW).toISOString(),
      maxAttempts: 1,
    });
    const lease = await leaseOne(deps);
    await fail(deps, lease, false);
    await controlJob(deps, alice, jobId, "pause");
    await expect(replayDeadLetter(deps, alice, lease.runId)).rejects.toBeInstanceOf(ConflictError);
    expect(await replayAllDeadLetters(deps, alice)).toEqual({
      replayed: 0,
      skippedPaused: 1,
      complete: true,
    });
    await controlJob(deps, alice, jobId, "resume");
    expect(await replayAllDeadLetters(deps, alice)).toEqual({
      replayed: 1,
      skippedPaused: 0,
      complete: true,
    });
  });
});
