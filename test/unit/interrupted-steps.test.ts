import { describe, expect, it } from "vitest";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { replayDeadLetter } from "../../lambdas/core/use-cases/dead-letters";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { cancelRunsAhead, SUPERSEDED_REASON } from "../../lambdas/core/use-cases/runs-ahead";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { crashing } from "../support/crashing";
import { dueIndexOneOff } from "../support/jobs";
import { knownRunsOf } from "../support/known-runs";
import { dueRun, type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";
import { tickSweep } from "../support/tick-sweeps";

/**
 * Every step that writes twice, killed between its writes (issue 15): the tick (its repair
 * pass, or its sweep) finishes what was cut short. A kill is a port method that throws, once,
 * before or after it wrote; later calls are the next invocation or the tick.
 */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "a", principal: "arn:aws:iam::1:user/alice" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["a"] };

async function leaseOne(deps: MemoryDeps) {
  const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
  if (!lease) throw new Error("nothing leased");
  return lease;
}

const statusOf = (deps: MemoryDeps, jobId: string) => shownStatus(deps, jobId);
const onlyRun = (deps: MemoryDeps) => {
  const [run, ...more] = [...deps.runs.runs.values()];
  if (!run || more.length > 0) throw new Error("expected exactly one run");
  return run;
};
/** The minute ticks until the run's check time has passed, each with its repair pass. */
async function ticksUntilRepaired(deps: MemoryDeps) {
  let settled = 0;
  for (let minute = 1; minute <= 5; minute++) {
    deps.clock.set(NOW + minute * 60_000);
    settled += (await repairRuns(deps)).settled;
  }
  return settled;
}

/**
 * A job whose last run ends it by a write (`completeJob`): a recurring job bounded to its one
 * firing, at NOW, fired and delivered. A one-off's end is its run's, unwritten (decision 0057),
 * so these steps' kills are a bounded recurring job's.
 */
async function lastRunDue(deps: MemoryDeps, extra: Record<string, unknown> = {}): Promise<string> {
  deps.clock.set(NOW - 1_000);
  const jobId = await dueRun(
    deps,
    {
      runAt: undefined,
      cron: "* * * * *",
      timeZone: "UTC",
      endAt: new Date(NOW + 30_000).toISOString(),
      ...extra,
    },
    alice,
  );
  deps.clock.set(NOW);
  return jobId;
}

describe("a job's last run finished, its finisher killed before the job is marked", () => {
  /** The run's message, shown again once the lease it was hidden for lapsed. */
  function messageComesBack(deps: MemoryDeps, jobId: string, runId: string) {
    deps.queue.ready.push({
      message: { runId, jobId, scheduledFor: NOW, tenant: "a", type: "x" },
      receiptHandle: "again",
    });
  }

  it.each([
    ["a success", "succeeded"],
    ["a dead letter", "failed"],
  ] as const)("%s: its message comes back and the lease step marks the job, once", async (_name, result) => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps);
    const lease = await leaseOne(deps);
    expect(lease.final).toBe(true);

    const killed = crashing(deps, "jobs", "completeJob", false);
    const body = { fence: lease.fence, result, retryable: false, final: lease.final };
    await expect(completeRun(killed, worker, lease.runId, body)).rejects.toThrow("killed");
    expect(await statusOf(deps, jobId)).toBe("active");
    // No repair-index entry (decision 0045): the message, not deleted, is the trace.
    expect(onlyRun(deps).checkAt).toBeUndefined();
    expect(deps.queue.deleted).toEqual([]);

    deps.clock.set(Date.parse(lease.leaseExpiresAt) + 1_000);
    messageComesBack(deps, jobId, lease.runId);
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(await statusOf(deps, jobId)).toBe("completed");
    expect(deps.queue.deleted).toEqual(["again"]);
    expect(onlyRun(deps)).toMatchObject({
      status: result === "succeeded" ? "succeeded" : "dead-lettered",
      checkAt: undefined,
    });
    expect(await ticksUntilRepaired(deps)).toBe(0); // nothing left for the repair pass
  });

  it("killed before the job is marked, the worker's repeated completion marks it", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps);
    const lease = await leaseOne(deps);
    const body = { fence: lease.fence, result: "succeeded" as const, final: true };
    const killed = crashing(deps, "jobs", "completeJob", false);
    await expect(completeRun(killed, worker, lease.runId, body)).rejects.toThrow("killed");
    expect(await completeRun(deps, worker, lease.runId, body)).toMatchObject({ status: "succeeded" });
    expect(await statusOf(deps, jobId)).toBe("completed");
  });

  it("a replayed last run (in the repair index), killed after the job is marked: the pass tidies up", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, {}, alice);
    const first = await leaseOne(deps);
    await completeRun(deps, worker, first.runId, { fence: first.fence, result: "failed", retryable: false });
    expect(await statusOf(deps, jobId)).toBe("completed");
    await replayDeadLetter(deps, alice, first.runId);
    expect(onlyRun(deps).checkAt).toBeDefined(); // a replay is watched by the repair pass
    deps.queue.deliverAll();
    const lease = await leaseOne(deps);
    const killed = crashing(deps, "runs", "settleFinalRun", false);
    await expect(
      completeRun(killed, worker, lease.runId, { fence: lease.fence, result: "succeeded" }),
    ).rejects.toThrow("killed");
    expect(onlyRun(deps)).toMatchObject({ status: "succeeded" });
    expect(onlyRun(deps).checkAt).toBeDefined();
    expect(await ticksUntilRepaired(deps)).toBe(1);
    expect(onlyRun(deps).checkAt).toBeUndefined();
  });

  it("dead-lettered by the lease step (every lease lapsed): its message comes back and marks the job", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps, { maxAttempts: 1, leaseSeconds: 30 });
    const lease = await leaseOne(deps);
    // The worker dies; its lease lapses and the message comes back.
    deps.clock.set(NOW + 31_000);
    messageComesBack(deps, jobId, lease.runId);
    const killed = crashing(deps, "jobs", "completeJob", false);
    await expect(leaseRuns(killed, worker, { workerId: "w", types: ["x"], max: 10 })).rejects.toThrow(
      "killed",
    );
    expect(onlyRun(deps).status).toBe(RunStatus.DeadLettered);
    expect(await statusOf(deps, jobId)).toBe("active");
    expect(deps.queue.deleted).toEqual([]);

    deps.clock.set(NOW + 70_000);
    messageComesBack(deps, jobId, lease.runId);
    await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(await statusOf(deps, jobId)).toBe("completed");
  });

  it("missed by the lease step (later than maxLateness): its message comes back and marks the job", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps, { maxLateness: "PT10S" });
    deps.clock.set(NOW + 20_000); // delivered late
    const [message] = deps.queue.ready;
    const killed = crashing(deps, "jobs", "completeJob", false);
    await expect(leaseRuns(killed, worker, { workerId: "w", types: ["x"], max: 10 })).rejects.toThrow(
      "killed",
    );
    expect(onlyRun(deps).status).toBe(RunStatus.Missed);
    expect(await statusOf(deps, jobId)).toBe("active");

    if (message) deps.queue.ready.push(message);
    await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(await statusOf(deps, jobId)).toBe("completed");
  });

  it("under an overlap policy too: the returning message marks the job before it is dropped", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps, { overlapPolicy: "skip" });
    const lease = await leaseOne(deps);
    const killed = crashing(deps, "jobs", "completeJob", false);
    const body = { fence: lease.fence, result: "succeeded" as const, final: true };
    await expect(completeRun(killed, worker, lease.runId, body)).rejects.toThrow("killed");
    deps.clock.set(Date.parse(lease.leaseExpiresAt) + 1_000);
    messageComesBack(deps, jobId, lease.runId);
    await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(await statusOf(deps, jobId)).toBe("completed");
    expect(deps.queue.deleted).toEqual(["again"]);
  });

  it("its job paused meanwhile: the run enters the repair index, and a resume killed before it ended the job is repaired", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, {}, alice);
    const lease = await leaseOne(deps);
    await controlJob(deps, alice, jobId, "pause");
    const body = { fence: lease.fence, result: "succeeded" as const, final: true };
    expect(await completeRun(deps, worker, lease.runId, body)).toMatchObject({ status: "succeeded" });
    expect(await statusOf(deps, jobId)).toBe("paused");
    expect(onlyRun(deps).checkAt).toBeDefined(); // its message is gone: the index keeps it in view

    const killed = crashing(deps, "runs", "listRecentRuns", false);
    await expect(controlJob(killed, alice, jobId, "resume")).rejects.toThrow("killed");
    expect(await statusOf(deps, jobId)).toBe("active");
    expect(await ticksUntilRepaired(deps)).toBe(1);
    expect(await statusOf(deps, jobId)).toBe("completed");
    expect(onlyRun(deps).checkAt).toBeUndefined();
  });

  it("the local queue reset lost its message: the first repair pass's scan marks the job", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps);
    const lease = await leaseOne(deps);
    const killed = crashing(deps, "jobs", "completeJob", false);
    const body = { fence: lease.fence, result: "succeeded" as const, final: true };
    await expect(completeRun(killed, worker, lease.runId, body)).rejects.toThrow("killed");
    deps.queue.ready.length = 0; // the emulator restarted empty
    expect(await repairRuns(deps, { queueWasReset: true })).toMatchObject({ resent: 0 });
    expect(await statusOf(deps, jobId)).toBe("completed");
  });

  it("a resume landing between the finisher's two reads: the run enters the repair index, which ends the job", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await lastRunDue(deps);
    const lease = await leaseOne(deps);
    const completeJob = deps.jobs.completeJob.bind(deps.jobs);
    deps.jobs.completeJob = async () => false; // paused when it wrote, active again when it reads
    const body = { fence: lease.fence, result: "succeeded" as const, final: true };
    expect(await completeRun(deps, worker, lease.runId, body)).toMatchObject({ status: "succeeded" });
    deps.jobs.completeJob = completeJob;
    expect(await statusOf(deps, jobId)).toBe("active");
    expect(onlyRun(deps).checkAt).toBeDefined();
    expect(await ticksUntilRepaired(deps)).toBe(1);
    expect(await statusOf(deps, jobId)).toBe("completed");
  });

  it("a last run a schedule change made not the last (the job fires later) finishes without ending or tracking", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, {}, alice);
    const lease = await leaseOne(deps);
    const job = await deps.jobs.getJob(jobId);
    if (!job) throw new Error("no job");
    deps.jobs.jobs.set(jobId, { ...job, nextRunAt: NOW + 3_600_000 }); // later firings now
    const body = { fence: lease.fence, result: "succeeded" as const, final: true };
    expect(await completeRun(deps, worker, lease.runId, body)).toMatchObject({ status: "succeeded" });
    expect(await statusOf(deps, jobId)).toBe("active");
    expect(onlyRun(deps).checkAt).toBeUndefined(); // the repair pass will not end the job on it
    expect(deps.queue.deleted).toHaveLength(1);
  });

  it("a cancelled last run's message (a schedule change superseded it) leaves its job alone", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, {}, alice);
    // The run made at create is not written (decision 0051): the schedule change's cancel
    // writes it, cancelled, from what its message carries (a last run's, so final).
    await cancelRunsAhead(deps, knownRunsOf(deps, jobId), SUPERSEDED_REASON, NOW);
    expect(onlyRun(deps)).toMatchObject({ status: RunStatus.Cancelled, final: true });
    const job = await deps.jobs.getJob(jobId);
    if (!job) throw new Error("no job");
    deps.jobs.jobs.set(jobId, { ...job, nextRunAt: NOW + 3_600_000 }); // the job goes on
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(deps.queue.deleted).toHaveLength(1); // the message is dropped
    expect(onlyRun(deps).checkAt).toBeUndefined(); // not tracked: nothing of the job's end waits on it
    expect(onlyRun(deps).status).toBe(RunStatus.Cancelled);
    expect(await statusOf(deps, jobId)).toBe("active");
  });

  it("finishes a last run whether the completion echoes `final`, omits it, or gets it wrong", async () => {
    for (const final of [true, undefined, false]) {
      const deps = memoryDeps(NOW);
      const jobId = await lastRunDue(deps);
      const lease = await leaseOne(deps);
      const body = { fence: lease.fence, result: "succeeded", ...(final === undefined ? {} : { final }) };
      expect(await completeRun(deps, worker, lease.runId, body)).toMatchObject({ status: "succeeded" });
      expect(await statusOf(deps, jobId)).toBe("completed");
      expect(onlyRun(deps).checkAt).toBeUndefined();
    }
  });
});

/**
 * A recurring job bounded to one firing, 20 minutes ahead (09:20), so the sweep handles it: its
 * end is written (a one-off's is its run's: decision 0057).
 */
async function oneFiringAhead(deps: MemoryDeps, extra: Record<string, unknown> = {}) {
  const runAt = NOW + 20 * 60_000;
  const { jobId } = await createJob(deps, alice, {
    type: "x",
    cron: "20 9 * * *",
    timeZone: "UTC",
    endAt: new Date(runAt + 30_000).toISOString(),
    ...extra,
  });
  return { jobId, runAt };
}

/**
 * The job's sweep killed after it made the run at `runAt` and before it moved the job on; the
 * run (made and sent, not written: decision 0051) then leased and succeeded at once. The job
 * still shows that run as its next one.
 */
async function finishedBeforeMovedOn(deps: MemoryDeps, jobId: string, runAt: number) {
  const group = Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);
  deps.clock.set(runAt - 20_000);
  const killed = crashing(deps, "jobs", "advanceJob", false);
  expect((await sweepGroup(killed, group)).failedShards).toBe(1);
  deps.clock.set(runAt);
  deps.queue.deliverAll();
  const lease = await leaseOne(deps);
  await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded", final: true });
  expect(await statusOf(deps, jobId)).toBe("active");
  return { group, lease };
}

describe("a sweep killed after creating a job's last run, before moving the job on", () => {
  it("a one-off's run finishing before the next sweep: the sweep moves the job past it, which ends it (decision 0057)", async () => {
    const deps = memoryDeps(NOW);
    // Filed in the due index, so the sweep makes its run (an active one's is made at create: 0048, 0058).
    const runAt = NOW + 20 * 60_000;
    const { jobId } = await dueIndexOneOff(deps, alice, runAt);
    const { group } = await finishedBeforeMovedOn(deps, jobId, runAt);
    expect(onlyRun(deps).checkAt).toBeUndefined(); // nothing to track: the sweep will come back to it

    deps.clock.set(runAt + 60_000);
    await sweepGroup(deps, group); // moves the job past its last run (the run exists)
    expect(await statusOf(deps, jobId)).toBe("completed");
    expect((await deps.jobs.getJob(jobId))?.status).toBe("active"); // as stored: no write ended it
    expect(deps.queue.ready).toEqual([]); // and its run was not sent again
  });

  it("a bounded recurring job's last run finishing before the next sweep still ends the job, through the repair pass", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, runAt } = await oneFiringAhead(deps);
    const { group, lease } = await finishedBeforeMovedOn(deps, jobId, runAt);
    expect(lease.final).toBe(true);
    expect(onlyRun(deps).checkAt).toBeDefined(); // so the run stays where the repair pass looks

    deps.clock.set(runAt + 60_000);
    await sweepGroup(deps, group); // moves the job past its last run (the run exists)
    deps.clock.set(runAt + 60_000 + deps.settings.repairGraceSeconds * 1000);
    for (let pass = 0; pass < 3 && (await statusOf(deps, jobId)) !== "completed"; pass++) {
      await repairRuns(deps);
      deps.clock.advance(deps.settings.repairGraceSeconds * 1000);
    }
    expect((await deps.jobs.getJob(jobId))?.status).toBe("completed"); // written
    expect(onlyRun(deps).checkAt).toBeUndefined();
  });
});

describe("a sweep killed after moving a job whose every remaining firing was missed", () => {
  it("the repair pass completes a bounded recurring job from its final missed record", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, runAt } = await oneFiringAhead(deps, { maxLateness: "PT1M" });
    // The sweeper was down from before the run was due until 5 minutes after.
    deps.clock.set(runAt + 5 * 60_000);
    const group = Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);
    const killed = crashing(deps, "jobs", "completeJob", false);
    const swept = await sweepGroup(killed, group);
    expect(swept.failedShards).toBe(1);
    expect(onlyRun(deps)).toMatchObject({ status: "missed", final: true });
    expect(await statusOf(deps, jobId)).toBe("active");
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBeUndefined();

    deps.clock.set(runAt + 5 * 60_000 + deps.settings.repairGraceSeconds * 1000);
    expect((await repairRuns(deps)).settled).toBe(1);
    expect(await statusOf(deps, jobId)).toBe("completed");
    expect(onlyRun(deps).checkAt).toBeUndefined();
  });

  it("a one-off's missed firing ends it as the sweep records it, with nothing written to the job (decision 0057)", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + 20 * 60_000;
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      runAt: new Date(runAt).toISOString(),
      maxLateness: "PT1M",
    });
    deps.clock.set(runAt + 5 * 60_000);
    const group = Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);
    const completions = crashing(deps, "jobs", "completeJob", false); // a write it must not need
    expect((await tickSweep(completions, group)).failedShards).toBe(0);
    expect(onlyRun(deps)).toMatchObject({ status: "missed", final: true, checkAt: undefined });
    expect(await statusOf(deps, jobId)).toBe("completed");
    expect((await repairRuns(deps)).settled).toBe(0);
  });
});

describe("a cancel killed before it recorded the job's overdue firings", () => {
  it("the next sweep records them as cancelled and takes the job out of the due index", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "* * * * *", timeZone: "UTC" });
    deps.runs.runs.clear(); // whatever the create fired near-term: not what this test is about
    const job = await deps.jobs.getJob(jobId);
    const firstDue = job?.nextRunAt ?? 0;
    // The sweeper is behind: three firings are due, none swept into runs.
    deps.clock.set(firstDue + 2 * 60_000 + 5_000);
    const killed = crashing(deps, "runs", "createRun", false);
    await expect(controlJob(killed, alice, jobId, "cancel")).rejects.toThrow("killed");
    expect(await statusOf(deps, jobId)).toBe("cancelled");
    expect(deps.runs.runs.size).toBeLessThan(3); // killed mid-way: at least one record is missing
    // The API shows no next run for a cancelled job, whatever the bookkeeping keeps.
    expect((await getJob(deps, alice, jobId)).nextRunAt).toBeUndefined();

    deps.clock.advance(60_000);
    await sweepGroup(deps, Math.floor(shardOf(jobId) / SHARDS_PER_GROUP));
    const runs = [...deps.runs.runs.values()].sort((a, b) => a.scheduledFor - b.scheduledFor);
    expect(runs.map((r) => [r.scheduledFor - firstDue, r.status])).toEqual([
      [0, "cancelled"],
      [60_000, "cancelled"],
      [120_000, "cancelled"],
    ]);
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBeUndefined();
    // And nothing more: a later sweep finds the job gone from the index.
    deps.clock.advance(10 * 60_000);
    await sweepGroup(deps, Math.floor(shardOf(jobId) / SHARDS_PER_GROUP));
    expect(deps.runs.runs.size).toBe(3);
  });

  it("a cancel that is not killed records them at once and leaves nothing for the sweep", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "* * * * *", timeZone: "UTC" });
    deps.runs.runs.clear();
    const firstDue = (await deps.jobs.getJob(jobId))?.nextRunAt ?? 0;
    deps.clock.set(firstDue + 60_000 + 5_000);
    await controlJob(deps, alice, jobId, "cancel");
    expect([...deps.runs.runs.values()].map((r) => r.status)).toEqual(["cancelled", "cancelled"]);
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBeUndefined();
  });
});

describe("a retry recorded, its sender killed before the retry's message went out", () => {
  it("the repair pass re-sends it once the retry's check time has passed; it runs again", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, { retry: { base: "PT2S", cap: "PT2S" } }, alice);
    const lease = await leaseOne(deps);
    deps.queue.sent.length = 0;
    const killed = crashing(deps, "queue", "send", false);
    await expect(
      completeRun(killed, worker, lease.runId, { fence: lease.fence, result: "failed", error: "boom" }),
    ).rejects.toThrow("killed");
    expect(onlyRun(deps)).toMatchObject({ status: "pending", attempt: 1 });
    expect(deps.queue.sent).toHaveLength(0); // the retry's message is lost

    for (let minute = 1; deps.queue.sent.length === 0 && minute <= 5; minute++) {
      deps.clock.set(NOW + minute * 60_000);
      await repairRuns(deps);
    }
    expect(deps.queue.sent.map((s) => s.message.runId)).toEqual([lease.runId]);
    deps.queue.deliverAll();
    const retried = await leaseOne(deps);
    expect(retried).toMatchObject({ runId: lease.runId, attempt: 2 });
    await completeRun(deps, worker, retried.runId, { fence: retried.fence, result: "succeeded" });
    expect(await statusOf(deps, jobId)).toBe("completed");
  });
});
