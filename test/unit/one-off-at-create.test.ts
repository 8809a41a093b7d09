import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import { IdempotencyConflictError } from "../../lambdas/core/errors";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { CREATE_SETTLES_MS, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { LOST_CREATE_RACE, RUN_AT_CREATE_WITHIN_MS } from "../../lambdas/core/use-cases/one-off-with-run";
import { crashing } from "../support/crashing";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/** Decision 0048: a one-off due within 15 minutes has its run made at create, before its job. */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const caller = { tenant: "t", principal: "arn:aws:iam::111122223333:role/a" };
const worker = { tenant: "t", principal: "arn:aws:iam::111122223333:role/w", tenants: ["t"] };
const at = (ms: number) => new Date(ms).toISOString();
const onlyRun = (deps: MemoryDeps) => [...deps.runs.runs.values()];

describe("a one-off due within 15 minutes", () => {
  it("gets its run and message at create, and is stored moved on, out of the due index", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + 10 * 60_000;
    const result = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    expect(result).toMatchObject({ created: true, nextRunAt: at(runAt).replace(".000", "") });
    expect(onlyRun(deps)).toEqual([
      expect.objectContaining({
        status: RunStatus.Pending,
        scheduledFor: runAt,
        final: true,
        checkAt: undefined,
      }),
    ]);
    expect(deps.queue.sent).toEqual([expect.objectContaining({ delaySeconds: 600 - DELIVERY_LEAD_SECONDS })]);
    const stored = await deps.jobs.getJob(result.jobId);
    expect(stored).toMatchObject({ status: "active", lastFiringAt: runAt });
    expect(stored?.nextRunAt).toBeUndefined();
    // No due-index entry: nothing for a sweep.
    expect(deps.jobs.jobs.get(result.jobId)?.dueKey).toBeUndefined();
    // Shown as any one-off whose run is made: no next run, the run pending in its history (an
    // export skips it: the run finishes where it was made).
    const shown = await getJob(deps, caller, result.jobId);
    expect(shown.nextRunAt).toBeUndefined();
    expect(shown.runs).toEqual([
      expect.objectContaining({ status: "pending", scheduledFor: result.nextRunAt }),
    ]);
  });

  it("runs and ends its job through the lease and the completion alone", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(NOW + 60_000) });
    deps.clock.set(NOW + 60_000 - DELIVERY_LEAD_SECONDS * 1000);
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    if (!lease) throw new Error("no lease");
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect((await deps.jobs.getJob(jobId))?.status).toBe("completed");
  });

  it("keeps the due index's way for a one-off 15 minutes or more ahead, or already due", async () => {
    const deps = memoryDeps(NOW);
    const later = await createJob(deps, caller, { type: "x", runAt: at(NOW + RUN_AT_CREATE_WITHIN_MS) });
    expect((await deps.jobs.getJob(later.jobId))?.nextRunAt).toBe(NOW + RUN_AT_CREATE_WITHIN_MS);
    expect(onlyRun(deps)).toEqual([]);
    // A minute late and allowed 30 s: the sweep's plan records it missed, as before.
    const late = await createJob(deps, caller, { type: "x", runAt: at(NOW - 60_000), maxLateness: "PT30S" });
    expect(onlyRun(deps)).toEqual([expect.objectContaining({ jobId: late.jobId, status: RunStatus.Missed })]);
    expect((await deps.jobs.getJob(late.jobId))?.status).toBe("completed");
  });

  it("a create killed after its run was made: the message waits for the job; a retry stores it, the run runs", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 1_000), idempotencyKey: "k1" };
    const killed = crashing(deps, "jobs", "createJob", false);
    await expect(createJob(killed, caller, body)).rejects.toThrow(/killed/);
    expect(onlyRun(deps)).toHaveLength(1);
    expect(deps.jobs.jobs.size).toBe(0);

    // The message comes before any job: hidden and looked at again, not dropped.
    deps.queue.deliverAll();
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect(deps.queue.deleted).toEqual([]);

    // No job after the create's time: the message is dropped, the run kept pending.
    deps.clock.advance(CREATE_SETTLES_MS);
    deps.queue.ready.push({
      message: messageOf(deps),
      receiptHandle: "later",
    });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect(deps.queue.deleted).toEqual(["later"]);
    expect(onlyRun(deps)[0]?.status).toBe(RunStatus.Pending);

    // The caller retries: the job is stored and the run sent again; it is leased and ends the job.
    const retried = await createJob(deps, caller, body);
    expect(retried.created).toBe(true);
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    if (!lease) throw new Error("no lease");
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect((await deps.jobs.getJob(retried.jobId))?.status).toBe("completed");
  });

  it("a create whose send failed answers an error and stores no job; a retry sends it", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 30_000), idempotencyKey: "k2" };
    deps.queue.failSends = true;
    await expect(createJob(deps, caller, body)).rejects.toThrow(/queue unavailable/);
    expect(deps.jobs.jobs.size).toBe(0);
    deps.queue.failSends = false;
    expect((await createJob(deps, caller, body)).created).toBe(true);
    expect(deps.queue.sent).toHaveLength(1);
  });

  it("a retry of a stored create makes and sends nothing", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 30_000), idempotencyKey: "k3" };
    await createJob(deps, caller, body);
    const writes = deps.queue.sent.length;
    expect((await createJob(deps, caller, body)).created).toBe(false);
    expect(deps.queue.sent).toHaveLength(writes);
    expect(onlyRun(deps)).toHaveLength(1);
  });

  it("a create that loses its idempotency key to another request cancels the run it made, and answers 409", async () => {
    const deps = memoryDeps(NOW);
    const first = { type: "x", runAt: at(NOW + 60_000), idempotencyKey: "k4" };
    const { jobId } = await createJob(deps, caller, first);
    // The other create read no job (the two raced), then found it stored when it wrote its own.
    const getJob = deps.jobs.getJob.bind(deps.jobs);
    let reads = 0;
    deps.jobs.getJob = async (id: string) => (reads++ === 0 ? undefined : getJob(id));
    await expect(createJob(deps, caller, { ...first, runAt: at(NOW + 120_000) })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    const runs = onlyRun(deps).sort((a, b) => a.scheduledFor - b.scheduledFor);
    expect(runs.map((r) => [r.jobId, r.scheduledFor, r.status, r.error])).toEqual([
      [jobId, NOW + 60_000, RunStatus.Pending, undefined],
      [jobId, NOW + 120_000, RunStatus.Cancelled, LOST_CREATE_RACE],
    ]);
    expect((await getJob(jobId))?.lastFiringAt).toBe(NOW + 60_000);
  });
});

function messageOf(deps: MemoryDeps) {
  const [run] = onlyRun(deps);
  if (!run) throw new Error("no run");
  return {
    runId: run.runId,
    jobId: run.jobId,
    scheduledFor: run.scheduledFor,
    tenant: run.tenant,
    type: run.type,
  };
}
