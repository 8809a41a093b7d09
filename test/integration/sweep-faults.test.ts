import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SchedulerDeps } from "../../lambdas/core/deps";
import type { Job } from "../../lambdas/core/job";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { IN_FLIGHT_MS } from "../../lambdas/core/use-cases/fire-jobs";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { startSqs } from "../../local/emulators";
import { withSqsJournal } from "../../local/sqs-journal";
import { crashing } from "../support/crashing";
import { oneOffJob as buildJob } from "../support/jobs";
import { OffsetClock } from "../support/offset-clock";
import { shownStatus } from "../support/shown-job";
import { createTestStack, laneMessageCount, recreateQueues, type TestStack } from "../support/stack";

/** The worker the tests lease as: it serves the tenants these jobs belong to. */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };

/**
 * Faults on the real emulators. A sweep is killed between its steps, or the SQS emulator is
 * restarted with runs in it; afterwards every run executes exactly once.
 */
async function oneOffJob(stack: TestStack, clock: OffsetClock, dueInMs: number): Promise<Job> {
  const job = buildJob(clock.now() + dueInMs, clock.now());
  await stack.deps.jobs.createJob(job);
  return job;
}

const groupOf = (jobId: string) => Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);

/**
 * Leases and completes everything due, as long as anything comes, `max` runs a request; returns
 * the runs executed.
 */
async function drain(deps: SchedulerDeps, max = 10): Promise<string[]> {
  const executed: string[] = [];
  for (let idle = 0; idle < 2; ) {
    const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max, waitSeconds: 1 });
    if (leases.length === 0) idle += 1;
    for (const lease of leases) {
      executed.push(lease.runKey);
      await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    }
  }
  return executed;
}

describe("a sweep killed between its steps", () => {
  // Decision 0051 took out the run's put (the sweep writes no item for a run it makes), and with
  // it the crash "after the run put". Its nearest property, a crash after the send that leaves
  // the job due, so that the next tick sends a copy of the run, is the test after these.
  it.each([
    ["after the send", "queue", "send", true],
    ["before the job update", "jobs", "advanceJob", false],
    ["after the job update", "jobs", "advanceJob", true],
  ] as const)(
    "%s: the next tick neither duplicates nor loses the run",
    async (_name, port, method, runFirst) => {
      // Prepare
      const clock = new OffsetClock();
      const stack = await createTestStack(`fault-${method}`, { clock });
      const job = await oneOffJob(stack, clock, 2_000);

      // Act: the first sweep dies at the chosen point; a later tick sweeps again.
      const first = await sweepGroup(crashing(stack.deps, port, method, runFirst), groupOf(job.jobId));
      expect(first.failedShards).toBe(1);
      clock.advance(IN_FLIGHT_MS + 1_000);
      const second = await sweepGroup(stack.deps, groupOf(job.jobId));
      expect(second.failedShards).toBe(0);
      const executed = await drain(stack.deps);

      // Assess: exactly one run row, executed exactly once, job completed.
      expect(executed).toEqual([
        `${job.jobId}@${new Date(job.schedule.kind === "once" ? job.schedule.runAt : 0).toISOString().replace(".000", "")}`,
      ]);
      const runs = await stack.deps.runs.listRecentRuns(job.jobId, 10);
      expect(runs.map((r) => r.status)).toEqual(["succeeded"]);
      expect(await shownStatus(stack.deps, job.jobId)).toBe("completed");
    },
  );

  it("after its send, before moving the job on: the next tick sends a copy; the run runs exactly once", async () => {
    // Prepare
    const clock = new OffsetClock();
    const stack = await createTestStack("fault-copy", { clock });
    const job = await oneOffJob(stack, clock, 2_000);

    // Act: the first sweep dies once its send is done, the job not moved on; a later tick
    // sweeps again.
    const first = await sweepGroup(crashing(stack.deps, "queue", "send", true), groupOf(job.jobId));
    expect(first.failedShards).toBe(1);
    clock.advance(IN_FLIGHT_MS + 1_000);
    const second = await sweepGroup(stack.deps, groupOf(job.jobId));
    expect(second).toMatchObject({ failedShards: 0, runsCreated: 1 });

    // Assess: the run is sent twice (a copy), and written by neither sweep (decision 0051).
    expect(await laneMessageCount(stack, "x")).toBe(2);
    expect(await stack.deps.runs.listRecentRuns(job.jobId, 10)).toEqual([]);

    // Act: the copies are leased one at a time, so the second comes after the first's run is over.
    const executed = await drain(stack.deps, 1);

    // Assess: one lease, run once; the other copy dropped; one run row; the job completed.
    expect(executed).toEqual([
      `${job.jobId}@${new Date(job.nextRunAt ?? 0).toISOString().replace(".000", "")}`,
    ]);
    expect(await laneMessageCount(stack, "x")).toBe(0);
    const runs = await stack.deps.runs.listRecentRuns(job.jobId, 10);
    expect(runs.map((r) => [r.status, r.attempt, r.fence])).toEqual([["succeeded", 1, 1]]);
    expect(await shownStatus(stack.deps, job.jobId)).toBe("completed");
  });
});

describe("the SQS emulator restarted with runs in it", () => {
  // Decision 0051: a run the sweep makes has no item until its lease, only its message, so the
  // repair pass (which re-sends unfinished runs from their items) has nothing to re-send for
  // it. The local runtime keeps its messages through the SQS journal (local/sqs-journal.ts),
  // restored on a start as local/main.ts does; the repair pass stays, as its first tick runs it.
  it("runs every run once after the journal restores the queue and the repair pass, none twice", async () => {
    // Prepare: a private SQS emulator, the stack's client journaled, five runs enqueued and due in 3 s.
    let sqs = await startSqs();
    const port = Number(new URL(sqs.endpoint).port);
    const clock = new OffsetClock();
    const stack = await createTestStack("sqs-restart", { clock, sqsEndpoint: sqs.endpoint });
    const journal = withSqsJournal(stack.sqs, join(mkdtempSync(join(tmpdir(), "sqs-restart-")), "sqs.jsonl"));
    expect(await journal.restore()).toBe(0);
    const jobs = await Promise.all(Array.from({ length: 5 }, () => oneOffJob(stack, clock, 3_000)));
    for (const group of new Set(jobs.map((j) => groupOf(j.jobId)))) await sweepGroup(stack.deps, group);
    expect(await laneMessageCount(stack, "x")).toBe(5);

    // Act: the emulator dies with the five messages; a new one starts empty on the same port,
    // gets the stack's queues again (the bootstrap's), and then what the journal kept.
    await sqs.close();
    sqs = await startSqs({ port });
    await recreateQueues(stack);
    expect(
      await leaseRuns(stack.deps, worker, { workerId: "w", types: ["x"], max: 10, waitSeconds: 1 }),
    ).toEqual([]);
    const restored = await journal.restore();
    const repaired = await repairRuns(stack.deps, { queueWasReset: true });
    const executed = await drain(stack.deps);

    // Assess: the journal brought the five back; the repair pass found no item to re-send from.
    expect(restored).toBe(5);
    expect(repaired.resent).toBe(0);
    expect(executed.sort()).toEqual(
      jobs.map((j) => `${j.jobId}@${new Date(j.nextRunAt ?? 0).toISOString().replace(".000", "")}`).sort(),
    );
    // A second repair pass, later, finds nothing left to do.
    clock.advance(10 * 60_000);
    expect(await repairRuns(stack.deps)).toMatchObject({ resent: 0 });
    expect(await laneMessageCount(stack, "x")).toBe(0);
    await sqs.close();
  }, 60_000);
});
