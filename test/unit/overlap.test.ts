import { describe, expect, it } from "vitest";
import { StaleFenceError } from "../../lambdas/core/errors";
import { parseRunId } from "../../lambdas/core/ids";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { heartbeatRun } from "../../lambdas/core/use-cases/heartbeat-run";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { backfillJob, triggerJob } from "../../lambdas/core/use-cases/manual-runs";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * Overlap policies, on the memory stores: two runs of one job, the second due while the first
 * is held by a worker. The runs are triggered by hand (a manual run is subject to the policy
 * like a scheduled one), so the test needs no sweep.
 */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };

async function jobWith(deps: MemoryDeps, overlapPolicy: string) {
  const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 0 1 1 *", overlapPolicy });
  return jobId;
}
/** A manual run of the job, delivered and offered to a worker: what it was given. */
async function runNow(deps: MemoryDeps, jobId: string) {
  const run = await triggerJob(deps, alice, jobId, {});
  deps.queue.deliverAll();
  const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
  return { run, leases };
}
const stored = (deps: MemoryDeps, runId: string) => {
  const key = parseRunId(runId);
  return key ? deps.runs.getRun(key.jobId, key.scheduledFor) : undefined;
};

describe("overlap policies", () => {
  it("allow (default): the second run starts beside the first", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await jobWith(deps, "allow");
    expect((await runNow(deps, jobId)).leases).toHaveLength(1);
    deps.clock.advance(1_000);
    expect((await runNow(deps, jobId)).leases).toHaveLength(1);
  });

  it("skip: a run due while the previous one runs is recorded skipped with the reason; after it finishes, runs start again", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await jobWith(deps, "skip");
    const first = await runNow(deps, jobId);
    const [held] = first.leases;
    deps.clock.advance(1_000);
    const second = await runNow(deps, jobId);
    expect(second.leases).toEqual([]);
    expect(await stored(deps, second.run.runId)).toMatchObject({
      status: RunStatus.Skipped,
      error: expect.stringContaining("still unfinished (overlapPolicy skip)"),
    });
    await completeRun(deps, worker, held?.runId ?? "", { fence: held?.fence, result: "succeeded" });
    deps.clock.advance(1_000);
    expect((await runNow(deps, jobId)).leases).toHaveLength(1);
  });

  it("buffer-one: one waits and starts when the running one finishes; a third is skipped", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await jobWith(deps, "buffer-one");
    const [held] = (await runNow(deps, jobId)).leases;
    deps.clock.advance(1_000);
    const waiting = await runNow(deps, jobId);
    expect(waiting.leases).toEqual([]);
    expect((await stored(deps, waiting.run.runId))?.status).toBe(RunStatus.Pending);
    deps.clock.advance(1_000);
    const third = await runNow(deps, jobId);
    expect(third.leases).toEqual([]);
    expect((await stored(deps, third.run.runId))?.status).toBe(RunStatus.Skipped);

    // The running one finishes: the waiting one is sent at once and starts.
    await completeRun(deps, worker, held?.runId ?? "", { fence: held?.fence, result: "succeeded" });
    deps.queue.deliverAll();
    const [woken, ...more] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(more).toEqual([]);
    expect(woken?.runId).toBe(waiting.run.runId);
  });

  it("cancel-previous: the running one is cancelled, its fence raised: its heartbeat and completion are refused", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await jobWith(deps, "cancel-previous");
    const [old] = (await runNow(deps, jobId)).leases;
    deps.clock.advance(1_000);
    const newer = await runNow(deps, jobId);
    expect(newer.leases).toHaveLength(1);
    expect(await stored(deps, old?.runId ?? "")).toMatchObject({
      status: RunStatus.Cancelled,
      error: expect.stringContaining("overlapPolicy cancel-previous"),
    });
    await expect(heartbeatRun(deps, worker, old?.runId ?? "", { fence: old?.fence })).rejects.toBeInstanceOf(
      StaleFenceError,
    );
    await expect(
      completeRun(deps, worker, old?.runId ?? "", { fence: old?.fence, result: "succeeded" }),
    ).rejects.toBeInstanceOf(StaleFenceError);
  });

  it("never skips or revokes a job's last run: it waits for the running one instead", async () => {
    const deps = memoryDeps(NOW);
    // A one-off whose last run comes due while a manual run of the job is held (its lease
    // outlasts the minute). Its run is made at create (decision 0048), its message sent.
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      runAt: new Date(NOW + 60_000).toISOString(),
      overlapPolicy: "skip",
      leaseSeconds: 300,
    });
    await triggerJob(deps, alice, jobId, {});
    deps.queue.deliverAll();
    const received = [...deps.queue.ready];
    const [manual, ...others] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(manual?.final).toBe(false);
    expect(others).toEqual([]);
    // The last run's message, received a minute early, was hidden until shortly before it is due.
    const hidden = received.filter(
      (r) =>
        r.message?.runId !== manual?.runId &&
        deps.queue.extended.some((e) => e.receiptHandle === r.receiptHandle),
    );
    expect(hidden.map((r) => r.message?.final)).toEqual([true]);
    const [lastMessage] = hidden;

    // It shows again once due, the manual run still held: it waits, not skipped. A skip would
    // write it skipped; waiting writes nothing (made, its lease writes it first: decision 0051).
    deps.clock.advance(60_000);
    deps.queue.ready.push(...hidden);
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(await stored(deps, lastMessage?.message?.runId ?? "")).toBeUndefined();
    expect(deps.queue.extended.at(-1)?.receiptHandle).toBe(lastMessage?.receiptHandle);
    expect(deps.queue.extended.at(-1)?.seconds).toBeGreaterThan(0);
    expect(deps.queue.deleted).toEqual([]);
    deps.queue.ready.push(...hidden);
    expect(knownRunsOf(deps, jobId).find((r) => r.final)).toMatchObject({
      status: RunStatus.Pending,
      fence: 0,
    });

    // cancel-previous: the last run is held, a manual run comes: the last run is not revoked.
    const deps2 = memoryDeps(NOW);
    const other = await createJob(deps2, alice, {
      type: "x",
      runAt: new Date(NOW).toISOString(),
      overlapPolicy: "cancel-previous",
    });
    deps2.queue.deliverAll();
    const [lastLease] = await leaseRuns(deps2, worker, { workerId: "w", types: ["x"] });
    expect(lastLease?.final).toBe(true);
    deps2.clock.advance(1_000);
    expect((await runNow(deps2, other.jobId)).leases).toEqual([]);
    expect((await stored(deps2, lastLease?.runId ?? ""))?.status).toBe(RunStatus.Leased);
  });

  it("lets the running run's own retry through, and skips a run due while the first waits for it", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      cron: "0 0 1 1 *",
      overlapPolicy: "skip",
      retry: { base: 2, cap: 2 },
    });
    const [first] = (await runNow(deps, jobId)).leases;
    await completeRun(deps, worker, first?.runId ?? "", {
      fence: first?.fence,
      result: "failed",
      error: "boom",
    });
    deps.clock.advance(1_000);
    // Due while the first waits for its retry (unfinished): skipped; the first's retry goes through.
    const during = await runNow(deps, jobId);
    expect((await stored(deps, during.run.runId))?.status).toBe(RunStatus.Skipped);
    expect(during.leases).toMatchObject([{ runId: first?.runId, attempt: 2 }]);
  });

  it("looks again in a second when another run of the job claimed the slot first", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await jobWith(deps, "skip");
    deps.jobs.claimRunSlot = async () => false;
    expect((await runNow(deps, jobId)).leases).toEqual([]);
    expect(deps.queue.extended.at(-1)?.seconds).toBe(1);
  });

  it("buffer-one: a run finding the running one just finished starts", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await jobWith(deps, "buffer-one");
    const [held] = (await runNow(deps, jobId)).leases;
    // The running one finishes between the read and the note: the note fails, the run starts.
    const setWake = deps.runs.setWake.bind(deps.runs);
    deps.runs.setWake = async (...args) => {
      await completeRun(deps, worker, held?.runId ?? "", { fence: held?.fence, result: "succeeded" });
      return setWake(...args);
    };
    deps.clock.advance(1_000);
    expect((await runNow(deps, jobId)).leases).toHaveLength(1);
  });

  it("lets backfilled runs run beside each other whatever the policy", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      interval: { every: "1h" },
      overlapPolicy: "skip",
    });
    await backfillJob(deps, alice, jobId, {
      from: new Date(NOW - 5 * 3_600_000).toISOString(),
      to: new Date(NOW - 1).toISOString(),
    });
    deps.queue.deliverAll();
    const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(leases.length).toBeGreaterThanOrEqual(5);
  });
});
