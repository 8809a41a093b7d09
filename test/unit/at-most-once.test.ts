import { describe, expect, it } from "vitest";
import { parseRunId } from "../../lambdas/core/ids";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { DROPPED_RETRY_REASON } from "../../lambdas/core/lifecycle/outcomes";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { replayDeadLetter } from "../../lambdas/core/use-cases/dead-letters";
import { LOST_RUN_REASON, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };
const iso = (ms: number) => new Date(ms).toISOString();

/** A one-off due now, leased by a worker that then vanishes; its message comes back after the lease. */
async function leasedThenAbandoned(deps: MemoryDeps, delivery?: string) {
  const { jobId } = await createJob(deps, alice, {
    type: "x",
    runAt: iso(NOW),
    leaseSeconds: 30,
    ...(delivery ? { delivery } : {}),
  });
  deps.queue.deliverAll();
  const [lease] = await leaseRuns(deps, worker, { workerId: "w1", types: ["x"] });
  if (!lease) throw new Error("no lease");
  deps.clock.advance(31_000); // the lease lapses: SQS hands the message out again
  const key = parseRunId(lease.runId);
  if (!key) throw new Error("bad run id");
  deps.queue.ready.push({
    message: { runId: lease.runId, jobId, scheduledFor: key.scheduledFor, tenant: "t-a", type: "x" },
    receiptHandle: "rh-again",
  });
  return { jobId, lease, key };
}

describe("at-most-once delivery", () => {
  it("records a run whose lease lapsed as lost, never leases it again, and ends a one-off job", async () => {
    const deps = memoryDeps(NOW);
    const counted: number[] = [];
    const withCounters = { ...deps, counters: { count: (_: string, n: number) => counted.push(n) } };
    const { jobId, key } = await leasedThenAbandoned(deps, "at-most-once");
    expect(await leaseRuns(withCounters, worker, { workerId: "w2", types: ["x"] })).toEqual([]);
    expect(await deps.runs.getRun(key.jobId, key.scheduledFor)).toMatchObject({
      status: RunStatus.Lost,
      error: LOST_RUN_REASON,
      attempt: 1,
    });
    expect(counted).toEqual([1]);
    expect(deps.queue.deleted).toContain("rh-again");
    expect(await shownStatus(deps, jobId)).toBe("completed");

    // A further copy of the message: still nothing leased.
    deps.queue.ready.push({
      message: {
        runId: `r_${jobId.slice(2)}_${key.scheduledFor}`,
        jobId,
        scheduledFor: key.scheduledFor,
        tenant: "t-a",
        type: "x",
      },
      receiptHandle: "rh-third",
    });
    expect(await leaseRuns(deps, worker, { workerId: "w3", types: ["x"] })).toEqual([]);
  });

  it("at-least-once (the default) leases the same run again with a higher fence", async () => {
    const deps = memoryDeps(NOW);
    const { lease } = await leasedThenAbandoned(deps);
    const [again] = await leaseRuns(deps, worker, { workerId: "w2", types: ["x"] });
    expect(again).toMatchObject({ runId: lease.runId, attempt: 2, fence: lease.fence + 1 });
  });

  it("never retries a failure: it is dead-lettered as not retried, and an operator's replay runs it once more", async () => {
    const deps = memoryDeps(NOW);
    await createJob(deps, alice, { type: "x", runAt: iso(NOW), delivery: "at-most-once", maxAttempts: 5 });
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w1", types: ["x"] });
    const result = await completeRun(deps, worker, lease?.runId ?? "", {
      fence: lease?.fence,
      result: "failed",
      error: "timeout",
    });
    expect(result.status).toBe("dead-lettered");
    const key = parseRunId(lease?.runId ?? "");
    expect((await deps.runs.getRun(key?.jobId ?? "", key?.scheduledFor ?? 0))?.error).toBe(
      "timeout (at-most-once: not retried)",
    );
    await replayDeadLetter(deps, alice, lease?.runId ?? "");
    deps.queue.deliverAll();
    const [replayed] = await leaseRuns(deps, worker, { workerId: "w1", types: ["x"] });
    expect(replayed?.runId).toBe(lease?.runId);
  });

  it("a retry left waiting by a PATCH to at-most-once holds no place against the next firing under skip", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      cron: "* * * * *",
      overlapPolicy: "skip",
      maxAttempts: 3,
      retry: { base: "PT10M", cap: "PT20M" },
    });
    const sweep = () => sweepGroup(deps, Math.floor(shardOf(jobId) / SHARDS_PER_GROUP));
    const firstDue = NOW + 60_000;
    deps.clock.set(firstDue);
    await sweep();
    deps.queue.deliverAll();
    const [first] = await leaseRuns(deps, worker, { workerId: "w1", types: ["x"] });
    await completeRun(deps, worker, first?.runId ?? "", {
      fence: first?.fence,
      result: "failed",
      error: "boom",
    });
    deps.queue.sent.splice(0); // the retry's message, minutes away
    await updateJob(deps, alice, jobId, { delivery: "at-most-once" }, undefined);

    deps.clock.set(firstDue + 60_000);
    await sweep();
    deps.queue.deliverAll();
    const [next] = await leaseRuns(deps, worker, { workerId: "w1", types: ["x"] });

    expect(next?.runId).not.toBe(first?.runId);
    expect(next).toMatchObject({ attempt: 1 });
    const retrying = parseRunId(first?.runId ?? "");
    expect(await deps.runs.getRun(jobId, retrying?.scheduledFor ?? 0)).toMatchObject({
      status: RunStatus.DeadLettered,
      error: DROPPED_RETRY_REASON,
    });
  });
});
