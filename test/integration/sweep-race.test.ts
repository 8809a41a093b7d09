import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { FixedClock } from "../../lambdas/core/clock";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { createTestStack, laneMessageCount } from "../support/stack";

describe("two sweepers racing on the same due job", () => {
  it("leave exactly one run row and one enqueued message", async () => {
    // Prepare: a job due in an hour; both sweepers see it as due in 10 s.
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
      },
    );
    clock.set(runAt - 10_000);
    const group = Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);

    // Act: two sweeps of the group at the same moment, through the real adapters.
    const [a, b] = await Promise.all([sweepGroup(stack.deps, group), sweepGroup(stack.deps, group)]);

    // Assess: one run row in DynamoDB, one message (delayed) in SQS.
    expect(a.runsCreated + b.runsCreated).toBe(1);
    const rows = await stack.db.send(
      new QueryCommand({
        TableName: stack.config.tableName,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :run)",
        ExpressionAttributeValues: { ":pk": `JOB#${jobId}`, ":run": "RUN#" },
      }),
    );
    expect(rows.Items).toHaveLength(1);
    expect(await laneMessageCount(stack, "x")).toBe(1);

    // And a later sweep, once the job has moved on, changes nothing.
    const again = await sweepGroup(stack.deps, group);
    expect(again).toMatchObject({ jobsRead: 0, runsCreated: 0 });
  });
});
