import { describe, expect, it } from "vitest";
import { parseRunId } from "../../lambdas/core/ids";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { replayDeadLetter } from "../../lambdas/core/use-cases/dead-letters";
import { LOST_RUN_REASON, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

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
    expect((await deps.jobs.getJob(jobId))?.status).toBe("completed");

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
});
