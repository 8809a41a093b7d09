import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { FixedClock } from "../../lambdas/core/clock";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { type Lease, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { createTestStack, laneMessageCount, laneMessageStates, type TestStack } from "../support/stack";
import { handOutSlices, tickSweep } from "../support/tick-sweeps";

const worker = { principal: "p", tenants: ["t"] };

/** The job's run items in DynamoDB. */
async function runRows(stack: TestStack, jobId: string) {
  const rows = await stack.db.send(
    new QueryCommand({
      TableName: stack.config.tableName,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :run)",
      ExpressionAttributeValues: { ":pk": `JOB#${jobId}`, ":run": "RUN#" },
    }),
  );
  return rows.Items ?? [];
}

/**
 * Two workers lease at once, again and again, until `done` says so (asked of the lanes' messages
 * of type x) or the deadline passes; answers every lease granted.
 */
async function leaseUntil(
  stack: TestStack,
  done: (states: Awaited<ReturnType<typeof laneMessageStates>>) => boolean,
  deadline: number,
): Promise<Lease[]> {
  const leases: Lease[] = [];
  while (!done(await laneMessageStates(stack, "x")) && Date.now() < deadline) {
    const batches = await Promise.all(
      ["w1", "w2"].map((workerId) =>
        leaseRuns(stack.deps, worker, { workerId, types: ["x"], max: 10, waitSeconds: 1 }),
      ),
    );
    leases.push(...batches.flat());
  }
  return leases;
}

describe("two sweepers racing on the same due job", () => {
  // Decision 0051: a sweep writes no run item, it only sends the run's message, so two racing
  // sweepers may both send it (a copy). What this guards is that the race still makes one run
  // that runs once: every copy is leased, exactly one lease is granted, and one run row is left.
  it("send one run, maybe as two copies: exactly one lease is granted, one run row is left", async () => {
    // Prepare: a job due in an hour; both sweepers see it as due in 10 s. Its lease is short, so
    // a copy held back while the lease is live comes back within the test.
    const now = Date.now();
    const clock = new FixedClock(now);
    const stack = await createTestStack("race", { clock });
    const runAt = now + 3_600_000;
    const { jobId } = await createJob(
      stack.deps,
      { tenant: "t", principal: "p" },
      {
        type: "x",
        runAt: new Date(runAt).toISOString(),
        leaseSeconds: 5,
      },
    );
    clock.set(runAt - 10_000);
    const group = Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);

    // Act: two sweeps of the group's message at the same moment (SQS delivered it twice), through
    // the real adapters: the one-off is made ahead, and the tick's slice holds it (decision 0059).
    const slice = (await handOutSlices(stack.deps, [group]))[0]?.ahead;
    const [a, b] = await Promise.all([
      sweepGroup(stack.deps, group, slice),
      sweepGroup(stack.deps, group, slice),
    ]);

    // Assess: one run, made once or twice (one message, delayed, for each making); no item yet.
    const made = a.runsCreated + b.runsCreated;
    expect(made).toBeGreaterThanOrEqual(1);
    expect(made).toBeLessThanOrEqual(2);
    expect(await laneMessageCount(stack, "x")).toBe(made);
    expect(await runRows(stack, jobId)).toEqual([]);

    // And a later sweep, once the job has moved on, changes nothing.
    const again = await tickSweep(stack.deps, group);
    expect(again).toMatchObject({ jobsRead: 0, runsCreated: 0 });
    expect(await laneMessageCount(stack, "x")).toBe(made);

    // Act: when it is due, two workers lease every copy at once.
    clock.set(runAt);
    // Every copy received: none visible or delayed any more.
    const leases = await leaseUntil(stack, (m) => m.visible + m.delayed === 0, Date.now() + 20_000);

    // Assess: exactly one lease, the first: one run row, leased.
    expect(leases.map((l) => [l.jobId, l.attempt, l.fence])).toEqual([[jobId, 1, 1]]);
    const [lease] = leases;
    if (!lease) throw new Error("no lease");
    expect((await runRows(stack, jobId)).map((row) => row.status)).toEqual(["leased"]);

    // Act: the run succeeds; a copy held back comes again once the lease is over.
    await completeRun(stack.deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });
    const later = await leaseUntil(
      stack,
      (m) => m.visible + m.delayed + m.inFlight === 0,
      Date.now() + 20_000,
    );

    // Assess: the copy was dropped, not run; the run ran once, its row the only one.
    expect(later).toEqual([]);
    expect(await laneMessageCount(stack, "x")).toBe(0);
    const rows = await runRows(stack, jobId);
    expect(rows.map((row) => [row.status, row.attempt, row.fence])).toEqual([["succeeded", 1, 1]]);
  }, 60_000);
});
