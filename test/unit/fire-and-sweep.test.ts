import { describe, expect, it } from "vitest";
import {
  DELIVERY_LEAD_SECONDS,
  EARLY_HOLD_MS,
  leadSecondsFor,
  MAX_LEAD_SECONDS,
} from "../../lambdas/core/delivery";
import type { DueJob } from "../../lambdas/core/job";
import { bucketOf, SHARDS_PER_GROUP, SWEEP_GROUP_COUNT, shardOf } from "../../lambdas/core/keys";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { RUN_AT_CREATE_WITHIN_MS } from "../../lambdas/core/use-cases/one-off-with-run";
import {
  bucketsToRead,
  CURSOR_SAFETY_MS,
  densityLeads,
  MAX_CATCH_UP_BUCKETS,
  sweepGroup,
} from "../../lambdas/core/use-cases/sweep-group";
import { crashing } from "../support/crashing";
import { dueIndexOneOff } from "../support/jobs";
import { knownRuns, knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

const NOW = Date.UTC(2026, 10, 2, 8, 30, 0);
const HOUR = 3_600_000;
const caller = { tenant: "t", principal: "p" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };
const lease = (deps: MemoryDeps) => leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });

/**
 * A one-off in the due index: created paused more than 15 minutes before it is due (an active
 * one's run is made at create: decisions 0048, 0058) and resumed, the clock then put back.
 */
async function dueJob(deps: MemoryDeps, runAt: number): Promise<DueJob> {
  const now = deps.clock.now();
  deps.clock.set(Math.min(now, runAt - RUN_AT_CREATE_WITHIN_MS));
  const { jobId } = await dueIndexOneOff(deps, caller, runAt);
  deps.clock.set(now);
  const job = await deps.jobs.getJob(jobId);
  if (!job?.nextRunAt) throw new Error("job has no next run");
  return { ...job, nextRunAt: job.nextRunAt };
}

/**
 * Every copy of a one-off's run, delivered at its due instant (racing or repeated sweeps may send
 * several: decision 0051): exactly one lease is granted; the other copies wait hidden while it is
 * held (one may be the holder's own) and are dropped once the run finished. The run runs once.
 */
async function leasedOnceFromEveryCopy(deps: MemoryDeps, job: DueJob) {
  const copies = deps.queue.sent.map((s) => s.message);
  expect(copies.length).toBeGreaterThan(1);
  deps.queue.deliverAll();
  deps.clock.set(job.nextRunAt);
  const leases = await lease(deps);
  expect(leases).toHaveLength(1);
  const [granted] = leases;
  if (!granted) throw new Error("not leased");
  expect(deps.queue.deleted).toEqual([]); // the other copies are hidden, not dropped
  await completeRun(deps, worker, granted.runId, { fence: granted.fence, result: "succeeded" });
  deps.clock.set(Date.parse(granted.leaseExpiresAt) + 1_000);
  const again = copies.slice(1).map((message, i) => ({ message, receiptHandle: `copy-${i}` }));
  deps.queue.ready.push(...again);
  expect(await lease(deps)).toEqual([]);
  expect(deps.queue.deleted).toEqual(expect.arrayContaining(again.map((r) => r.receiptHandle)));
  expect(knownRunsOf(deps, job.jobId)).toMatchObject([{ status: RunStatus.Succeeded, attempt: 1, fence: 1 }]);
}

const groupOf = (jobId: string) => Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);

describe("fireJobs", () => {
  it("marks a job's last run final: a one-off's run and the last firing before endAt, no other", async () => {
    const deps = memoryDeps(NOW - HOUR); // created well ahead, so the API does not fire them
    const oneOff = await dueJob(deps, NOW + 10_000);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      interval: { every: "1m" },
      startAt: new Date(NOW + 60_000).toISOString(),
      endAt: new Date(NOW + 150_000).toISOString(),
    });
    const recurring = await deps.jobs.getJob(jobId);
    if (!recurring?.nextRunAt) throw new Error("no next run");
    deps.clock.set(NOW);
    await fireJobs(deps, [oneOff, { ...recurring, nextRunAt: recurring.nextRunAt }], NOW + 200_000);
    // The sweep writes nothing (decision 0051): each run is its message, which says it is final.
    expect(deps.runs.runs.size).toBe(0);
    const finals = knownRuns(deps).map((r) => [r.jobId === oneOff.jobId, r.scheduledFor - NOW, r.final]);
    expect(finals).toEqual(
      expect.arrayContaining([
        [true, 10_000, true],
        [false, 60_000, false],
        [false, 120_000, true],
      ]),
    );
    expect(finals).toHaveLength(3);
    // Each message carries when its run was made, for the run's first write.
    expect(deps.queue.sent.map((s) => s.message.madeAt)).toEqual([NOW, NOW, NOW]);
  });

  it("sends two copies of one run when two sweepers race on the same job; the run is leased once", async () => {
    const deps = memoryDeps(NOW);
    const job = await dueJob(deps, NOW + HOUR);
    deps.clock.set(NOW + HOUR - 20_000); // inside the 30 s lookahead
    await Promise.all([fireJobs(deps, [job]), fireJobs(deps, [job])]);
    // No conditional put picks a winner any more (decision 0051): both read no item and send.
    // The copies name one run; the job is moved on once.
    expect(new Set(deps.queue.sent.map((s) => s.message.runId)).size).toBe(1);
    expect(deps.queue.sent.map((s) => s.delaySeconds)).toEqual([
      20 - DELIVERY_LEAD_SECONDS,
      20 - DELIVERY_LEAD_SECONDS,
    ]);
    expect((await deps.jobs.getJob(job.jobId))?.nextRunAt).toBeUndefined();
    expect(deps.runs.runs.size).toBe(0);

    await leasedOnceFromEveryCopy(deps, job);
  });

  it("sends a run again after a sweep killed after its send, before moving the job on; it is leased once", async () => {
    const deps = memoryDeps(NOW);
    const job = await dueJob(deps, NOW + HOUR);
    deps.clock.set(NOW + HOUR);
    // Killed before its send: nothing was written, so nothing is left half done.
    deps.queue.failSends = true;
    await expect(fireJobs(deps, [job])).rejects.toThrow();
    deps.queue.failSends = false;
    expect(deps.runs.runs.size).toBe(0);
    expect((await deps.jobs.getJob(job.jobId))?.nextRunAt).toBe(job.nextRunAt); // still in the index

    // Killed after its send, before it moved the job on.
    const killed = crashing(deps, "jobs", "advanceJob", false);
    await expect(fireJobs(killed, [job])).rejects.toThrow("killed");
    expect(deps.queue.sent).toHaveLength(1);
    expect((await deps.jobs.getJob(job.jobId))?.nextRunAt).toBe(job.nextRunAt);

    // No item to wait on (the old IN_FLIGHT_MS): the next sweep sends it again at once, a
    // duplicate copy of the same run, and moves the job on.
    expect(await fireJobs(deps, [job])).toMatchObject({ created: 1, duplicates: 0, deferred: 0 });
    expect(deps.queue.sent.map((s) => s.message.runId)).toEqual([
      deps.queue.sent[0]?.message.runId,
      deps.queue.sent[0]?.message.runId,
    ]);
    expect((await deps.jobs.getJob(job.jobId))?.nextRunAt).toBeUndefined();

    await leasedOnceFromEveryCopy(deps, job);
  });

  it("gives no firing's run a repair-index entry, not even its job's last (decisions 0043, 0045)", async () => {
    const deps = memoryDeps(NOW - HOUR, { advanceBlockSeconds: 0 }); // one firing a sweep
    const oneOff = await dueJob(deps, NOW + 10_000);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      interval: { every: "1m" },
      startAt: new Date(NOW + 5_000).toISOString(),
    });
    const recurring = await deps.jobs.getJob(jobId);
    if (!recurring?.nextRunAt) throw new Error("no next run");
    deps.clock.set(NOW);
    await fireJobs(deps, [oneOff, { ...recurring, nextRunAt: recurring.nextRunAt }], NOW + 20_000);
    // Nothing is written at the sweep (decision 0051), so no entry yet; the runs' first write,
    // their lease, gives them none either.
    expect(deps.runs.runs.size).toBe(0);
    deps.queue.deliverAll();
    deps.clock.set(NOW + 10_000);
    expect(await lease(deps)).toHaveLength(2);
    const tracked = [...deps.runs.runs.values()].map((r) => [
      r.jobId === oneOff.jobId,
      r.final,
      r.checkAt !== undefined,
    ]);
    expect(tracked).toHaveLength(2);
    expect(tracked).toEqual(
      expect.arrayContaining([
        [true, true, false],
        [false, false, false],
      ]),
    );
  });

  it("records a firing missed once past maxLateness though a killed sweep sent it in time; that copy never starts it late", async () => {
    const deps = memoryDeps(NOW - HOUR);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      interval: { every: "1m" },
      maxLateness: "PT10S",
    });
    const stored = await deps.jobs.getJob(jobId);
    if (!stored?.nextRunAt) throw new Error("no next run");
    const job = { ...stored, nextRunAt: stored.nextRunAt };
    deps.clock.set(job.nextRunAt);
    // Sent in time, the sweep killed before it moved the job on.
    await expect(fireJobs(crashing(deps, "jobs", "advanceJob", false), [job])).rejects.toThrow("killed");
    const inTime = deps.queue.sent.find((s) => s.message.scheduledFor === job.nextRunAt)?.message;
    if (!inTime) throw new Error("not sent");

    // Before decision 0051 the run, written in time and orphaned, was sent again here for the
    // lease step to judge. A made run is not written: the late sweep finds no item, plans the
    // firing missed and records it so, and sends nothing for it.
    deps.clock.advance(30_000); // the firing is now 30 s late: planned as missed
    await fireJobs(deps, [job]);
    expect(deps.queue.sent.filter((s) => s.message.scheduledFor === job.nextRunAt)).toHaveLength(1);
    expect((await deps.runs.getRun(jobId, job.nextRunAt))?.status).toBe(RunStatus.Missed);

    // The copy sent in time, received only now, finds the record: dropped, never leased.
    deps.queue.ready.push({ message: inTime, receiptHandle: "in-time" });
    expect(await lease(deps)).toEqual([]);
    expect(deps.queue.deleted).toContain("in-time");
    expect(await deps.runs.getRun(jobId, job.nextRunAt)).toMatchObject({
      status: RunStatus.Missed,
      fence: 0,
    });
  });

  for (const finished of [false, true])
    it(`does not re-send a run that is already ${finished ? "finished" : "leased"}, but moves its job on`, async () => {
      const deps = memoryDeps(NOW);
      const job = await dueJob(deps, NOW + HOUR);
      deps.clock.set(NOW + HOUR);
      // Sent, and the sweep killed before it moved the job on; the run is then leased (written).
      await expect(fireJobs(crashing(deps, "jobs", "advanceJob", false), [job])).rejects.toThrow("killed");
      deps.queue.deliverAll();
      const [granted] = await lease(deps);
      if (!granted) throw new Error("not leased");
      if (finished)
        await completeRun(deps, worker, granted.runId, { fence: granted.fence, result: "succeeded" });
      const again = await fireJobs(deps, [job]);
      expect(again).toMatchObject({ created: 0, duplicates: 1, deferred: 0 });
      expect(deps.queue.sent).toHaveLength(0);
      expect((await deps.jobs.getJob(job.jobId))?.nextRunAt).toBeUndefined();
    });
});

describe("sweepGroup", () => {
  it("fires the jobs due before the horizon and leaves later ones in the index", async () => {
    const deps = memoryDeps(NOW);
    const soon = await dueJob(deps, NOW + HOUR + 5_000);
    const later = await dueJob(deps, NOW + 2 * HOUR);
    deps.clock.set(NOW + HOUR);
    const stats = await sweepGroup(deps, groupOf(soon.jobId));
    expect(stats.runsCreated).toBe(1);
    expect(deps.queue.sent.map((s) => s.message.jobId)).toEqual([soon.jobId]);
    expect((await deps.jobs.getJob(later.jobId))?.nextRunAt).toBe(NOW + 2 * HOUR);
  });

  it("finds a job that fell due during a long outage and catches the cursor up", async () => {
    const deps = memoryDeps(NOW);
    const job = await dueJob(deps, NOW + 60_000);
    const group = groupOf(job.jobId);
    await deps.jobs.advanceSweepCursor(group, bucketOf(NOW));
    deps.clock.set(NOW + 5 * HOUR); // nothing ran for five hours
    const stats = await sweepGroup(deps, group);
    expect(stats.runsCreated).toBe(1);
    expect(stats.enqueueLatenessMs[0]).toBe(5 * HOUR - 60_000);
    expect(await deps.jobs.getSweepCursor(group)).toBe(bucketOf(NOW + 5 * HOUR - CURSOR_SAFETY_MS));
  });

  it("reads the hour before on a group's very first sweep, so jobs accepted just before it are found", async () => {
    const deps = memoryDeps(Date.UTC(2026, 10, 2, 8, 50));
    const job = await dueJob(deps, Date.UTC(2026, 10, 2, 8, 59)); // filed under the 08:00 bucket
    deps.clock.set(Date.UTC(2026, 10, 2, 9, 10)); // first sweep, in the next hour, no cursor yet
    expect((await sweepGroup(deps, groupOf(job.jobId))).runsCreated).toBe(1);
  });

  it("keeps the cursor on a bucket whose job another writer is still firing", async () => {
    const deps = memoryDeps(NOW);
    const job = await dueJob(deps, NOW + 60_000);
    const group = groupOf(job.jobId);
    await deps.jobs.advanceSweepCursor(group, bucketOf(NOW));
    deps.clock.set(NOW + 3 * HOUR);
    // Another writer created the run a moment ago and has not moved the job on yet.
    await deps.runs.createRun({
      runId: "r",
      jobId: job.jobId,
      tenant: "t",
      type: "x",
      scheduledFor: job.nextRunAt,
      status: RunStatus.Pending,
      attempt: 0,
      fence: 0,
      createdAt: NOW + 3 * HOUR - 1_000,
      startedAt: undefined,
      leaseExpiresAt: undefined,
      workerId: undefined,
      finishedAt: undefined,
      error: undefined,
      checkAt: NOW + 4 * HOUR,
      final: true,
    });
    const stats = await sweepGroup(deps, group);
    expect(stats.deferred).toBe(1);
    expect(await deps.jobs.getSweepCursor(group)).toBe(bucketOf(NOW));
  });

  it("reads old buckets from the cursor, capped, and every bucket from settled to the horizon", () => {
    expect(bucketsToRead(10, 10, 11)).toEqual([10, 11]);
    expect(bucketsToRead(5, 8, 8)).toEqual([5, 6, 7, 8]);
    const far = bucketsToRead(0, 1000, 1000);
    expect(far).toHaveLength(MAX_CATCH_UP_BUCKETS + 1);
    expect(far.at(-1)).toBe(1000);
  });
});

describe("the lead of a dense second (decision 0014)", () => {
  it("grows with the runs due in the second: base lead, plus the time to lease them all, capped", () => {
    expect(leadSecondsFor(0, 400)).toBe(DELIVERY_LEAD_SECONDS);
    expect(leadSecondsFor(1, 400)).toBe(DELIVERY_LEAD_SECONDS + 1);
    expect(leadSecondsFor(4_000, 400)).toBe(DELIVERY_LEAD_SECONDS + 10);
    expect(leadSecondsFor(4_001, 400)).toBe(DELIVERY_LEAD_SECONDS + 11);
    expect(leadSecondsFor(1_000_000, 400)).toBe(MAX_LEAD_SECONDS);
    expect(leadSecondsFor(1_000, 0)).toBe(DELIVERY_LEAD_SECONDS); // no rate planned: the base lead
    // Never beyond what the lease step accepts ahead.
    expect((MAX_LEAD_SECONDS + 1) * 1000).toBeLessThanOrEqual(EARLY_HOLD_MS);
  });

  it("estimates a second's runs from one group's count times the number of groups", () => {
    const due = NOW + 60_000;
    const jobs = Array.from({ length: 10 }, (_, i) => ({ nextRunAt: due + i * 10 }) as DueJob);
    const leadOf = densityLeads([...jobs, { nextRunAt: due + 5_000 } as DueJob], 32, 40);
    expect(leadOf(due + 999)).toBe(DELIVERY_LEAD_SECONDS + 8); // 10 x 32 = 320 runs at 40 a second
    expect(leadOf(due + 5_000)).toBe(DELIVERY_LEAD_SECONDS + 1); // 1 x 32 = 32 runs
    expect(leadOf(due + 9_000)).toBe(DELIVERY_LEAD_SECONDS); // nothing due then
  });

  it("sends a dense second's runs earlier than a lone run's, from the same sweep", async () => {
    // Prepare: 200 jobs due on one second, one due two seconds earlier; a planned 10 leases/s.
    const deps = memoryDeps(NOW - HOUR, { leasesPerSecond: 10 });
    const dense = NOW + 25_000;
    for (let i = 0; i < 200; i++) await dueJob(deps, dense);
    const lone = await dueJob(deps, dense - 2_000);
    deps.clock.set(NOW);

    // Act: every group swept, as a tick does.
    for (let group = 0; group < SWEEP_GROUP_COUNT; group++) await sweepGroup(deps, group);

    // Assess: the lone run's second counts 1 x 32 groups = 32 runs: a lead of 5 + 4 s, so its
    // message shows up 23 - 9 s from now. Each group estimates the dense second from its own
    // ~6 jobs (x 32): most get the longest lead and show up at once; none less than 9 s.
    const delays = deps.queue.sent.map((s) => ({ jobId: s.message.jobId, delay: s.delaySeconds }));
    expect(delays).toHaveLength(201);
    expect(delays.find((d) => d.jobId === lone.jobId)?.delay).toBe(23 - (DELIVERY_LEAD_SECONDS + 4));
    const denseDelays = delays.filter((d) => d.jobId !== lone.jobId).map((d) => d.delay);
    expect(Math.max(...denseDelays)).toBeLessThanOrEqual(25 - (DELIVERY_LEAD_SECONDS + 4));
    expect(denseDelays.sort((a, b) => a - b)[100]).toBe(0);
  });
});
