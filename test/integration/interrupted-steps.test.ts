import { describe, expect, it } from "vitest";
import type { SchedulerDeps } from "../../lambdas/core/deps";
import type { Job } from "../../lambdas/core/job";
import { repairKeyOf, SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { type Lease, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { crashing } from "../support/crashing";
import { oneFiringSchedule, oneOffJob } from "../support/jobs";
import { OffsetClock } from "../support/offset-clock";
import { shownStatus } from "../support/shown-job";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Multi-write steps killed between their writes, on the real emulators (issue 15): the tick
 * finishes each. The crash loop found the first: a job's only run dead-lettered, the runtime
 * killed before the job was marked, the job left active with nothing to run.
 */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };
const tenant = { tenant: "t", principal: "arn:aws:iam::1:user/operator" };
const groupOf = (jobId: string) => Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);

async function stackWithJob(name: string, job: (now: number) => Job) {
  const clock = new OffsetClock();
  const stack = await createTestStack(name, { clock });
  const created = job(clock.now());
  await stack.deps.jobs.createJob(created);
  return { clock, stack, job: created };
}

async function leaseDue(deps: SchedulerDeps): Promise<Lease> {
  for (let tries = 0; tries < 10; tries++) {
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 1, waitSeconds: 1 });
    if (lease) return lease;
  }
  throw new Error("nothing leased");
}

const statusOf = (stack: TestStack, jobId: string) => shownStatus(stack.deps, jobId);
/** The job's runs still in the repair index, whatever their check time. */
async function inRepairIndex(stack: TestStack, jobId: string) {
  const page = await stack.deps.runs.queryRepairCandidates(repairKeyOf(jobId), Number.MAX_SAFE_INTEGER, 100);
  return page.items.filter((c) => c.jobId === jobId);
}
/** The tick, once the runs' check times have passed. */
async function tickLater(stack: TestStack, clock: OffsetClock) {
  clock.advance((stack.config.settings.repairGraceSeconds + 60) * 1000);
  return repairRuns(stack.deps);
}

// A one-off's end is its run's (decision 0057): these kills are of a recurring job's last run,
// bounded to one firing, whose end is still written.
describe("a job's last run finished, its finisher killed before the job is marked", () => {
  it.each([
    ["succeeded", "succeeded"],
    ["failed", "dead-lettered"],
  ] as const)(
    "%s: the run's message comes back and the lease step marks the job (decision 0045)",
    async (result, runStatus) => {
      const { stack, job } = await stackWithJob(`last-${result}`, (now) =>
        oneOffJob(now + 1_000, now, { schedule: oneFiringSchedule(now + 1_000) }),
      );
      await sweepGroup(stack.deps, groupOf(job.jobId));
      // The receipt of the message that delivers the run, to show it again without waiting out
      // its lease in real time.
      const handles: string[] = [];
      const receive = stack.deps.queue.receive.bind(stack.deps.queue);
      stack.deps.queue.receive = async (request) => {
        const got = await receive(request);
        handles.push(...got.map((r) => r.receiptHandle));
        return got;
      };
      const lease = await leaseDue(stack.deps);

      const killed = crashing(stack.deps, "jobs", "completeJob", false);
      const body = { fence: lease.fence, result, retryable: false, final: lease.final };
      await expect(completeRun(killed, worker, lease.runId, body)).rejects.toThrow("killed");
      expect(await statusOf(stack, job.jobId)).toBe("active");
      expect(
        (await stack.deps.runs.getRun(job.jobId, lease.scheduledFor ? Date.parse(lease.scheduledFor) : 0))
          ?.status,
      ).toBe(runStatus);
      expect(await inRepairIndex(stack, job.jobId)).toEqual([]); // carried by its message

      // The lease it was hidden for ends: the message shows up again.
      expect(
        await stack.deps.queue.hide(handles.map((receiptHandle) => ({ receiptHandle, seconds: 0 }))),
      ).toEqual([]);
      for (let tries = 0; tries < 10 && (await statusOf(stack, job.jobId)) !== "completed"; tries++) {
        expect(
          await leaseRuns(stack.deps, worker, { workerId: "w", types: ["x"], max: 1, waitSeconds: 1 }),
        ).toEqual([]);
      }
      expect(await statusOf(stack, job.jobId)).toBe("completed");
      expect(await inRepairIndex(stack, job.jobId)).toEqual([]);
      expect(await stack.deps.queue.laneBacklog("t", "x")).toBe(0); // the message is gone
    },
    30_000,
  );

  it("not killed: the run leaves the repair index with the job marked", async () => {
    const { stack, job } = await stackWithJob("last-ok", (now) => oneOffJob(now + 1_000, now));
    await sweepGroup(stack.deps, groupOf(job.jobId));
    const lease = await leaseDue(stack.deps);
    await completeRun(stack.deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    expect(await statusOf(stack, job.jobId)).toBe("completed");
    expect(await inRepairIndex(stack, job.jobId)).toEqual([]);
  }, 30_000);
});

/**
 * The job's sweep killed after it made the job's last run and before it moved the job on; the
 * run then leased and succeeded. The job still shows that run as its next one.
 */
async function finishedBeforeMovedOn(name: string, makeJob: Parameters<typeof stackWithJob>[1]) {
  const made = await stackWithJob(name, makeJob);
  const { stack, job } = made;
  const killed = crashing(stack.deps, "jobs", "advanceJob", false);
  expect((await sweepGroup(killed, groupOf(job.jobId))).failedShards).toBe(1);
  const lease = await leaseDue(stack.deps);
  await completeRun(stack.deps, worker, lease.runId, {
    fence: lease.fence,
    result: "succeeded",
    final: true,
  });
  expect(await statusOf(stack, job.jobId)).toBe("active");
  return made;
}

describe("a sweep killed after creating a job's last run, before moving the job on", () => {
  it("a bounded job's run finishing before the next sweep still ends the job: the next sweep and the repair pass", async () => {
    const { clock, stack, job } = await finishedBeforeMovedOn("last-unmoved", (now) =>
      oneOffJob(now + 1_000, now, { schedule: oneFiringSchedule(now + 1_000) }),
    );
    expect(await inRepairIndex(stack, job.jobId)).toMatchObject([{ status: "succeeded" }]);

    await sweepGroup(stack.deps, groupOf(job.jobId));
    expect(await tickLater(stack, clock)).toMatchObject({ settled: 1 });
    expect(await statusOf(stack, job.jobId)).toBe("completed");
    expect(await inRepairIndex(stack, job.jobId)).toEqual([]);
  }, 30_000);

  it("a one-off's run finishing before the next sweep: the next sweep moves the job past it, which ends it", async () => {
    const { stack, job } = await finishedBeforeMovedOn("last-unmoved-once", (now) =>
      oneOffJob(now + 1_000, now),
    );
    expect(await inRepairIndex(stack, job.jobId)).toEqual([]); // the sweep comes back to it

    await sweepGroup(stack.deps, groupOf(job.jobId));
    expect(await statusOf(stack, job.jobId)).toBe("completed");
    expect((await stack.deps.jobs.getJob(job.jobId))?.status).toBe("active"); // unwritten
  }, 30_000);
});

describe("a sweep killed after moving a job whose every remaining firing was missed", () => {
  it("the tick's repair pass completes a bounded job", async () => {
    // Due ten minutes ago, at most a minute late: the sweeper was down.
    const { clock, stack, job } = await stackWithJob("all-missed", (now) =>
      oneOffJob(now - 10 * 60_000, now - 20 * 60_000, {
        maxLatenessMs: 60_000,
        schedule: oneFiringSchedule(now - 10 * 60_000),
      }),
    );
    const killed = crashing(stack.deps, "jobs", "completeJob", false);
    expect((await sweepGroup(killed, groupOf(job.jobId))).failedShards).toBe(1);
    expect(await statusOf(stack, job.jobId)).toBe("active");
    expect(await inRepairIndex(stack, job.jobId)).toMatchObject([{ status: "missed" }]);

    expect(await tickLater(stack, clock)).toMatchObject({ settled: 1 });
    expect(await statusOf(stack, job.jobId)).toBe("completed");
    expect(await inRepairIndex(stack, job.jobId)).toEqual([]);
  }, 30_000);

  it("a one-off is ended by its missed record as the sweep writes it", async () => {
    const { stack, job } = await stackWithJob("all-missed-once", (now) =>
      oneOffJob(now - 10 * 60_000, now - 20 * 60_000, { maxLatenessMs: 60_000 }),
    );
    expect((await sweepGroup(stack.deps, groupOf(job.jobId))).failedShards).toBe(0);
    expect(await statusOf(stack, job.jobId)).toBe("completed");
    expect(await inRepairIndex(stack, job.jobId)).toEqual([]);
  }, 30_000);
});

describe("a cancel killed before it recorded the job's overdue firings", () => {
  it("the next sweep records each as cancelled and takes the job out of the due index", async () => {
    const minute = 60_000;
    const { stack, job } = await stackWithJob("cancel", (now) => {
      const first = Math.floor(now / minute) * minute - 2 * minute; // three firings due, none swept
      return oneOffJob(first, now - 10 * minute, {
        schedule: { kind: "cron", cron: "* * * * *", timeZone: "UTC" },
        nextRunAt: first,
      });
    });
    const killed = crashing(stack.deps, "runs", "createRun", false);
    await expect(controlJob(killed, tenant, job.jobId, "cancel")).rejects.toThrow("killed");
    expect(await statusOf(stack, job.jobId)).toBe("cancelled");

    await sweepGroup(stack.deps, groupOf(job.jobId));
    const runs = await stack.deps.runs.listRecentRuns(job.jobId, 10);
    expect(runs.map((r) => [r.scheduledFor - (job.nextRunAt ?? 0), r.status]).reverse()).toEqual([
      [0, "cancelled"],
      [minute, "cancelled"],
      [2 * minute, "cancelled"],
    ]);
    expect((await stack.deps.jobs.getJob(job.jobId))?.nextRunAt).toBeUndefined();
  }, 30_000);
});

describe("a retry recorded, its sender killed before the retry's message went out", () => {
  it("the tick's repair pass re-sends it and it runs", async () => {
    const { clock, stack, job } = await stackWithJob("retry", (now) =>
      oneOffJob(now + 1_000, now, { retry: { baseMs: 1_000, capMs: 1_000 } }),
    );
    await sweepGroup(stack.deps, groupOf(job.jobId));
    const lease = await leaseDue(stack.deps);
    const killed = crashing(stack.deps, "queue", "send", false);
    const failure = { fence: lease.fence, result: "failed", error: "boom" };
    await expect(completeRun(killed, worker, lease.runId, failure)).rejects.toThrow("killed");

    expect(await tickLater(stack, clock)).toMatchObject({ resent: 1 });
    const retried = await leaseDue(stack.deps);
    expect(retried).toMatchObject({ runId: lease.runId, attempt: 2 });
    await completeRun(stack.deps, worker, retried.runId, { fence: retried.fence, result: "succeeded" });
    expect(await statusOf(stack, job.jobId)).toBe("completed");
  }, 30_000);
});
