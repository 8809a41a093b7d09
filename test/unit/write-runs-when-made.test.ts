import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import type { RunMessage } from "../../lambdas/core/ports";
import { RunStatus } from "../../lambdas/core/run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * `writeRunsWhenMade: 1`, an upgrade's first deploy (docs/deploy.md): runs are written when made,
 * so a lease function of the code before decision 0051, which reads a made run's message as the
 * copy of a run that is gone, still finds each one.
 */
const NOW = Date.UTC(2026, 11, 3, 9, 0, 0);
const caller = { tenant: "t", principal: "arn:aws:iam::111122223333:role/a" };
const worker = { tenant: "t", principal: "arn:aws:iam::111122223333:role/w", tenants: ["t"] };
const at = (ms: number) => new Date(ms).toISOString();

/** What the code before decision 0051 read of a message: no seed. */
function asOldCodeReadsIt(deps: MemoryDeps): void {
  for (const sent of deps.queue.sent) {
    const { madeAt: _madeAt, final: _final, request: _request, ...old } = sent.message;
    (sent as { message: RunMessage }).message = old;
  }
}

describe("writeRunsWhenMade", () => {
  for (const write of [0, 1]) {
    it(`${write}: a one-off made at create and a sweep's block ${write ? "are written, and leased by older code" : "are carried by their messages only"}`, async () => {
      const deps = memoryDeps(NOW, { writeRunsWhenMade: write });
      const oneOff = await createJob(deps, caller, { type: "x", runAt: at(NOW + 60_000) });
      const cron = await createJob(deps, caller, {
        type: "x",
        cron: "* * * * *",
        startAt: at(NOW + 120_000),
      });
      const job = await deps.jobs.getJob(cron.jobId);
      if (job?.nextRunAt === undefined) throw new Error("no next run");
      await fireJobs(deps, [{ ...job, nextRunAt: job.nextRunAt }]);
      const made = deps.queue.sent.length;
      expect(made).toBeGreaterThan(2);
      // Every message still carries its seed (the new lease code needs no write of its own).
      expect(deps.queue.sent.every((sent) => sent.message.madeAt !== undefined)).toBe(true);
      expect(deps.runs.runs.size).toBe(write ? made : 0);
      if (!write) return;
      expect([...deps.runs.runs.values()].every((run) => run.status === RunStatus.Pending)).toBe(true);

      asOldCodeReadsIt(deps);
      deps.clock.set(NOW + 120_000 - DELIVERY_LEAD_SECONDS * 1000);
      deps.queue.deliverAll();
      const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
      expect(leases.map((lease) => lease.jobId)).toContain(oneOff.jobId);
      expect(leases.map((lease) => lease.jobId)).toContain(cron.jobId);
    });
  }

  it("1: a keyed one-off goes the due index's way (its run, written, could be another request's)", async () => {
    const deps = memoryDeps(NOW, { writeRunsWhenMade: 1 });
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      runAt: at(NOW + 60_000),
      idempotencyKey: "k",
    });
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBe(NOW + 60_000);
    expect(deps.queue.sent).toEqual([]);
  });
});

describe("writeRunsWhenMade: 1 after runs were made without a write", () => {
  it("writes the job's own made run when a lease step sees its message, even one it puts back", async () => {
    const lean = memoryDeps(NOW);
    const { jobId } = await createJob(lean, caller, {
      type: "x",
      cron: "* * * * *",
      startAt: at(NOW + 60_000),
      endAt: at(NOW + 150_000),
      overlapPolicy: "skip",
      leaseSeconds: 300,
    });
    const job = await lean.jobs.getJob(jobId);
    if (job?.nextRunAt === undefined) throw new Error("no next run");
    await fireJobs(lean, [{ ...job, nextRunAt: job.nextRunAt }]);
    expect(lean.runs.runs.size).toBe(0);
    const messageAt = (ms: number) => {
      const sent = lean.queue.sent.find((s) => s.message.scheduledFor === ms);
      if (!sent) throw new Error("no message");
      return sent.message;
    };
    // The switch to 1 (an upgrade's first deploy, or before a rollback): the same stores, the new setting.
    const deps = { ...lean, settings: { ...lean.settings, writeRunsWhenMade: 1 } };
    deps.clock.set(NOW + 60_000);
    deps.queue.ready.push({ message: messageAt(NOW + 60_000), receiptHandle: "first" });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toHaveLength(1);
    // The job's last run comes while the first still runs: a last run is not skipped, it waits,
    // put back, and is written, so code from before decision 0051 would find it.
    deps.clock.set(NOW + 120_000);
    deps.queue.ready.push({ message: messageAt(NOW + 120_000), receiptHandle: "second" });
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect(deps.queue.deleted).not.toContain("second");
    expect(await deps.runs.getRun(jobId, NOW + 120_000)).toMatchObject({ status: RunStatus.Pending });
  });
});
