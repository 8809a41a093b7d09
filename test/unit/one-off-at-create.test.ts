import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import { IdempotencyConflictError } from "../../lambdas/core/errors";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { CREATE_SETTLES_MS, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { RUN_AT_CREATE_WITHIN_MS } from "../../lambdas/core/use-cases/one-off-with-run";
import { crashing } from "../support/crashing";
import { knownRuns } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

/** Decision 0048: a one-off due within 15 minutes has its run made at create, before its job. */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const caller = { tenant: "t", principal: "arn:aws:iam::111122223333:role/a" };
const worker = { tenant: "t", principal: "arn:aws:iam::111122223333:role/w", tenants: ["t"] };
const at = (ms: number) => new Date(ms).toISOString();
/** The runs as the scheduler knows them: written, or made and carried by their messages (0051). */
const onlyRun = (deps: MemoryDeps) => knownRuns(deps);

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
    // Made, not written (decision 0051): its message is the run until its lease writes it.
    expect(deps.runs.runs.size).toBe(0);
    expect(deps.queue.sent).toEqual([
      {
        message: expect.objectContaining({ scheduledFor: runAt, madeAt: NOW, final: true }),
        delaySeconds: 600 - DELIVERY_LEAD_SECONDS,
      },
    ]);
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
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("keeps the due index's way for a one-off 15 to 17 minutes ahead (decision 0058 makes later ones ahead), or already due", async () => {
    const deps = memoryDeps(NOW);
    const later = await createJob(deps, caller, { type: "x", runAt: at(NOW + RUN_AT_CREATE_WITHIN_MS) });
    expect((await deps.jobs.getJob(later.jobId))?.nextRunAt).toBe(NOW + RUN_AT_CREATE_WITHIN_MS);
    expect(onlyRun(deps)).toEqual([]);
    // A minute late and allowed 30 s: the sweep's plan records it missed, as before.
    const late = await createJob(deps, caller, { type: "x", runAt: at(NOW - 60_000), maxLateness: "PT30S" });
    expect(onlyRun(deps)).toEqual([expect.objectContaining({ jobId: late.jobId, status: RunStatus.Missed })]);
    expect(await shownStatus(deps, late.jobId)).toBe("completed");
  });

  it("a create killed after its run was made: the message waits for the job a while, then is dropped", async () => {
    const deps = memoryDeps(NOW);
    const killed = crashing(deps, "jobs", "createJob", false);
    await expect(createJob(killed, caller, { type: "x", runAt: at(NOW + 1_000) })).rejects.toThrow(/killed/);
    // The run was made: its message was sent; nothing is written (decision 0051).
    expect(onlyRun(deps)).toHaveLength(1);
    expect(deps.runs.runs.size).toBe(0);
    expect(deps.jobs.jobs.size).toBe(0);
    const message = messageOf(deps);

    // The message comes before any job (as it may while a create stores it): back in a second.
    deps.queue.deliverAll();
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect(deps.queue.extended).toEqual([expect.objectContaining({ seconds: 1 })]);
    expect(deps.queue.deleted).toEqual([]);

    // No job after the create's time: dropped. The job was never accepted; nothing leases its run,
    // and nothing writes it.
    deps.clock.advance(CREATE_SETTLES_MS);
    deps.queue.ready.push({ message, receiptHandle: "later" });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect(deps.queue.deleted).toEqual(["later"]);
    expect(deps.runs.runs.size).toBe(0);
  });

  it("a create whose send failed answers an error, stores no job and gives its quota count back", async () => {
    const deps = memoryDeps(NOW);
    deps.queue.failSends = true;
    let released = 0;
    const release = deps.quotas.releaseCreate.bind(deps.quotas);
    deps.quotas.releaseCreate = async (tenant: string) => {
      released += 1;
      await release(tenant);
    };
    await expect(createJob(deps, caller, { type: "x", runAt: at(NOW + 30_000) })).rejects.toThrow(
      /queue unavailable/,
    );
    expect(deps.jobs.jobs.size).toBe(0);
    expect(released).toBe(1);
  });

  it("makes a keyed create's run too; a retry with the key makes nothing more (decision 0052)", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 5 * 60_000), idempotencyKey: "k1" };
    const { jobId } = await createJob(deps, caller, body);
    expect(await deps.jobs.getJob(jobId)).toMatchObject({ lastFiringAt: NOW + 5 * 60_000 });
    expect(deps.jobs.jobs.get(jobId)?.dueKey).toBeUndefined();
    expect(deps.queue.sent).toHaveLength(1);
    // The same request again: the stored job's answer, no second message.
    expect(await createJob(deps, caller, body)).toMatchObject({ created: false, jobId });
    // The same key, another time: 409, and nothing made.
    await expect(createJob(deps, caller, { ...body, runAt: at(NOW + 6 * 60_000) })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    expect(deps.queue.sent).toHaveLength(1);
    expect(onlyRun(deps)).toEqual([expect.objectContaining({ jobId, scheduledFor: NOW + 5 * 60_000 })]);
  });

  it("a keyed create killed after its send, retried with another body: only the stored request's run runs", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 60_000), idempotencyKey: "k2" };
    const killed = crashing(deps, "jobs", "createJob", false);
    await expect(createJob(killed, caller, body)).rejects.toThrow(/killed/);
    // Retried (its caller never had an answer) with another time, then with the same time and
    // another payload: each a run for the same job id, made before the job was stored.
    const { jobId } = await createJob(deps, caller, { ...body, runAt: at(NOW + 30_000) });
    expect(deps.queue.sent.map((sent) => sent.message.jobId)).toEqual([jobId, jobId]);
    expect(new Set(deps.queue.sent.map((sent) => sent.message.request)).size).toBe(2);

    deps.clock.set(NOW + 60_000);
    deps.queue.deliverAll();
    const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    // The firing the job was stored with runs; the killed create's run never does, and leaves no record.
    expect(leases.map((lease) => lease.scheduledFor)).toEqual([at(NOW + 30_000).replace(".000", "")]);
    expect(await deps.runs.getRun(jobId, NOW + 60_000)).toBeUndefined();
    expect(deps.queue.ready).toEqual([]);
  });

  it("a keyed create that lost the race to store: its answer is the stored job's, its run never runs", async () => {
    for (const [other, time] of [
      [{ runAt: at(NOW + 90_000) }, NOW + 90_000],
      [{ runAt: at(NOW + 10_000) }, NOW + 10_000],
      // The same instant, another payload: the same run id, and the stored job's run.
      [{ payload: { other: true } }, NOW + 60_000],
    ] as const) {
      const deps = memoryDeps(NOW);
      const body = { type: "x", runAt: at(NOW + 60_000), idempotencyKey: "k3", payload: { mine: true } };
      const first = await createJob(deps, caller, body);
      // The second read the key before the first stored it: it makes its run, then finds the job.
      const getJob = deps.jobs.getJob.bind(deps.jobs);
      let reads = 0;
      deps.jobs.getJob = async (id: string) => (++reads === 1 ? undefined : getJob(id));
      await expect(createJob(deps, caller, { ...body, ...other })).rejects.toBeInstanceOf(
        IdempotencyConflictError,
      );
      deps.jobs.getJob = getJob;
      expect(deps.queue.sent).toHaveLength(2);

      deps.clock.set(NOW + 90_000);
      deps.queue.deliverAll();
      const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
      expect(leases.map((lease) => [lease.jobId, lease.scheduledFor, lease.payload])).toEqual([
        [first.jobId, at(NOW + 60_000).replace(".000", ""), { mine: true }],
      ]);
      if (time !== NOW + 60_000) expect(await deps.runs.getRun(first.jobId, time)).toBeUndefined();
      expect(deps.queue.ready).toEqual([]);
    }
  });

  it("a keyed create killed after its send, retried with another body before the first run's time: that run never runs", async () => {
    // The one case only the request tag stops: the killed create's run is due before the retry
    // stored the job, so it is no run a schedule change superseded (supersededOneOffRun).
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 10_000), idempotencyKey: "k5", payload: { first: true } };
    const killed = crashing(deps, "jobs", "createJob", false);
    await expect(createJob(killed, caller, body)).rejects.toThrow(/killed/);
    deps.clock.set(NOW + 20_000);
    const retry = { ...body, runAt: at(NOW + 60_000), payload: { second: true } };
    const { jobId } = await createJob(deps, caller, retry);
    const [killedMessage, storedMessage] = deps.queue.sent.map((sent) => sent.message);
    if (!killedMessage || !storedMessage) throw new Error("not two messages");
    deps.clock.set(NOW + 25_000);
    deps.queue.ready.push({ message: killedMessage, receiptHandle: "killed" });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(deps.queue.deleted).toEqual(["killed"]);
    expect(await deps.runs.getRun(jobId, NOW + 10_000)).toBeUndefined();
    // The stored request's own run still comes, at its time.
    deps.clock.set(NOW + 60_000);
    deps.queue.ready.push({ message: storedMessage, receiptHandle: "stored" });
    const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(leases.map((lease) => [lease.scheduledFor, lease.payload])).toEqual([
      [at(NOW + 60_000).replace(".000", ""), { second: true }],
    ]);
  });

  it("a keyless put whose answer was lost and whose retry found it stored: still this create's (201, count kept)", async () => {
    for (const body of [
      { type: "x", runAt: at(NOW + 60_000) },
      { type: "x", runAt: at(NOW + RUN_AT_CREATE_WITHIN_MS + 60_000) },
    ]) {
      const deps = memoryDeps(NOW);
      const put = deps.jobs.createJob.bind(deps.jobs);
      deps.jobs.createJob = async (job) => {
        await put(job);
        return "exists";
      };
      let released = 0;
      deps.quotas.releaseCreate = async () => {
        released += 1;
      };
      const result = await createJob(deps, caller, body);
      expect(result.created).toBe(true);
      expect(released).toBe(0);
    }
  });

  it("a keyed create that finds its job gives its quota count back, made or lost the race", async () => {
    const deps = memoryDeps(NOW);
    let released = 0;
    deps.quotas.releaseCreate = async () => {
      released += 1;
    };
    const body = { type: "x", runAt: at(NOW + 60_000), idempotencyKey: "k8" };
    await createJob(deps, caller, body);
    await createJob(deps, caller, body); // found by its read first
    const getJob = deps.jobs.getJob.bind(deps.jobs);
    let reads = 0;
    deps.jobs.getJob = async (id: string) => (++reads === 1 ? undefined : getJob(id));
    deps.clock.advance(1_000);
    await createJob(deps, caller, body); // lost the race: found by its put
    expect(released).toBe(2);
  });
});

/** The message of the only run, as its maker sent it (made, not written: decision 0051). */
function messageOf(deps: MemoryDeps) {
  const [sent, ...more] = deps.queue.sent;
  if (!sent || more.length > 0) throw new Error("not one message");
  return sent.message;
}
