import {
  ConditionalCheckFailedException,
  ProvisionedThroughputExceededException,
} from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { createDocumentClient } from "../../lambdas/adapters/clients";
import { DynamoJobStore } from "../../lambdas/adapters/dynamo/dynamo-job-store";
import { DynamoRunStore } from "../../lambdas/adapters/dynamo/dynamo-run-store";
import { toRunItem } from "../../lambdas/adapters/dynamo/run-item";
import type { Job } from "../../lambdas/core/job";
import { bucketOf, dueKeyOf, shardOf } from "../../lambdas/core/keys";
import { newRun } from "../../lambdas/core/lifecycle/creation";
import { oneOffJob } from "../support/jobs";

const db = mockClient(DynamoDBDocumentClient);
const client = createDocumentClient({ region: "us-east-1", dynamodbEndpoint: undefined });
const jobs = new DynamoJobStore(client, "jobs-table");
const runs = new DynamoRunStore(client, "jobs-table");

const NOW = Date.UTC(2026, 10, 2, 9);
const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: "The conditional request failed", $metadata: {} });
/** A failed condition as DynamoDB answers one asked for the item (ReturnValuesOnConditionCheckFailure). */
const failedOn = (item: Record<string, unknown>) =>
  Object.assign(conditionFailed(), { Item: marshall(item, { removeUndefinedValues: true }) });
const throttled = () => new ProvisionedThroughputExceededException({ message: "slow down", $metadata: {} });

const job: Job = { ...oneOffJob(NOW, NOW - 1000, { payload: { a: 1 } }), jobId: "j_0123456789abcdefghjk" };

beforeEach(() => db.reset());

describe("DynamoJobStore", () => {
  it("creates a job with a conditional put, filed in the due index under its bucket and shard", async () => {
    db.on(PutCommand).resolves({});
    expect(await jobs.createJob(job)).toBe("created");
    expect(db).toHaveReceivedCommandWith(PutCommand, {
      TableName: "jobs-table",
      ConditionExpression: "attribute_not_exists(pk)",
      Item: expect.objectContaining({
        pk: `JOB#${job.jobId}`,
        sk: "JOB",
        dueKey: dueKeyOf(bucketOf(NOW), shardOf(job.jobId)),
        dueAt: NOW,
      }),
    });
  });

  it("reports an existing job instead of overwriting it", async () => {
    db.on(PutCommand).rejects(conditionFailed());
    expect(await jobs.createJob(job)).toBe("exists");
  });

  it("lets other DynamoDB errors through for the edge to answer 500", async () => {
    db.on(PutCommand).rejects(throttled());
    await expect(jobs.createJob(job)).rejects.toThrow("slow down");
  });

  it("reads a job back from its item", async () => {
    db.on(GetCommand).resolves({ Item: { pk: "JOB#x", sk: "JOB", ...job, dueKey: "1#0001", dueAt: NOW } });
    expect(await jobs.getJob(job.jobId)).toEqual(job);
    expect(db).toHaveReceivedCommandWith(GetCommand, { ConsistentRead: true });
  });

  it("reads it eventually consistently, at half the read units, only when asked to", async () => {
    db.on(GetCommand).resolves({ Item: { pk: "JOB#x", sk: "JOB", ...job, dueKey: "1#0001", dueAt: NOW } });
    expect(await jobs.getJob(job.jobId, true)).toEqual(job);
    expect(db).toHaveReceivedCommandWith(GetCommand, { ConsistentRead: false });
    expect(db).not.toHaveReceivedCommandWith(GetCommand, { ConsistentRead: true });
  });

  it("moves a job out of the index only if it is still at the expected instant", async () => {
    db.on(UpdateCommand).rejectsOnce(conditionFailed()).resolves({});
    expect(await jobs.advanceJob(job.jobId, NOW, undefined, NOW)).toBe(false);
    expect(await jobs.advanceJob(job.jobId, NOW, undefined, NOW)).toBe(true);
    expect(db).toHaveReceivedCommandWith(UpdateCommand, {
      ConditionExpression: "nextRunAt = :from AND #status = :active",
      UpdateExpression: "SET updatedAt = :now REMOVE nextRunAt, dueKey, dueAt",
    });
  });

  it("files a moved job under the bucket of its next run", async () => {
    db.on(UpdateCommand).resolves({});
    const next = NOW + 5 * 3_600_000;
    await jobs.advanceJob(job.jobId, NOW, next, NOW);
    expect(db).toHaveReceivedCommandWith(UpdateCommand, {
      ExpressionAttributeValues: expect.objectContaining({
        ":next": next,
        ":dueKey": dueKeyOf(bucketOf(next), shardOf(job.jobId)),
      }),
    });
  });

  it("only ever moves a sweep cursor forward", async () => {
    db.on(UpdateCommand).rejects(conditionFailed());
    await expect(jobs.advanceSweepCursor(3, 100)).resolves.toBeUndefined();
    expect(db).toHaveReceivedCommandWith(UpdateCommand, {
      ConditionExpression: "attribute_not_exists(#bucket) OR #bucket < :b",
    });
  });
});

describe("DynamoRunStore", () => {
  const dueJob = { ...job, nextRunAt: NOW };
  const run = newRun(dueJob, NOW, NOW, 30_000);
  /** A lease of `run` at NOW, through the message handed out as "rh". */
  const grant = { workerId: "w", startsAt: NOW, leaseExpiresAt: NOW + 30_000, receiptHandle: "rh", now: NOW };

  it("creates a run with a conditional put keyed by job and scheduled instant", async () => {
    db.on(PutCommand).resolvesOnce({}).rejects(conditionFailed());
    expect(await runs.createRun(run)).toBe("created");
    expect(await runs.createRun(run)).toBe("exists");
    expect(db).toHaveReceivedCommandWith(PutCommand, {
      Item: expect.objectContaining({
        pk: `JOB#${job.jobId}`,
        sk: "RUN#001793610000000",
        repairKey: expect.any(String),
      }),
    });
  });

  it("answers a refused lease with the run when the receive's own write holds it (the item DynamoDB returns)", async () => {
    const held = { ...toRunItem(run), status: "leased", fence: 1, attempt: 1, receiptHandle: "rh" };
    // DynamoDB returns the item a failed condition met, in attribute-value form.
    db.on(UpdateCommand)
      .rejectsOnce(failedOn(held))
      .rejectsOnce(failedOn({ ...held, receiptHandle: "rh-other" }));
    expect(await runs.leaseRun(run.jobId, run.scheduledFor, grant)).toMatchObject({
      status: "leased",
      fence: 1,
      attempt: 1,
    });
    expect(await runs.leaseRun(run.jobId, run.scheduledFor, grant)).toBeUndefined();
    expect(db).toHaveReceivedCommandWith(UpdateCommand, { ReturnValuesOnConditionCheckFailure: "ALL_OLD" });
    // The item came with the failure: nothing was read.
    expect(db).not.toHaveReceivedCommand(GetCommand);
  });

  it("answers a refused retry or give-back as applied when the item DynamoDB returns is its own effect", async () => {
    const plan = { error: "boom", retryAt: NOW + 20_000, checkAt: NOW + 50_000, now: NOW };
    const retried = { ...toRunItem(run), status: "pending", fence: 1, attempt: 1, ...plan };
    db.on(UpdateCommand)
      .rejectsOnce(failedOn(retried))
      .rejectsOnce(failedOn({ ...retried, retryAt: NOW + 21_000 }))
      .rejectsOnce(failedOn(retried))
      .rejectsOnce(failedOn({ ...retried, fence: 2 }));
    expect(await runs.retryRun(run.jobId, run.scheduledFor, 1, plan)).toEqual({ receiptHandle: undefined });
    expect(await runs.retryRun(run.jobId, run.scheduledFor, 1, plan)).toBeUndefined(); // another retry's
    expect(await runs.returnLease(run.jobId, run.scheduledFor, 1, NOW)).toMatchObject({
      status: "pending",
      fence: 1,
    });
    expect(await runs.returnLease(run.jobId, run.scheduledFor, 1, NOW)).toBeUndefined(); // leased since
    expect(db).not.toHaveReceivedCommand(GetCommand);
  });

  it("raises the fence only if nobody leased the run first", async () => {
    db.on(UpdateCommand).rejects(conditionFailed());
    // No item came with the failure (as from dynalite): the run is read, and is not this receive's.
    db.on(GetCommand).resolves({});
    expect(await runs.leaseRun(run.jobId, run.scheduledFor, grant)).toBeUndefined();
    expect(db).toHaveReceivedCommandWith(UpdateCommand, {
      // Pending and due (a retry: its retry time has come), or leased with a lapsed lease.
      ConditionExpression: "availableAt <= :starts AND (#status = :pending OR #status = :leased)",
      UpdateExpression: expect.stringContaining("ADD fence :one, attempt :one"),
    });
    // The repair check time is an index key: a lease leaves it alone.
    expect(db.commandCalls(UpdateCommand)[0]?.args[0].input.UpdateExpression).not.toContain("checkAt");
  });

  it("finishes a run for the current fence and hands back the delivering message's receipt", async () => {
    const outcome = { status: "succeeded", error: undefined, now: NOW, final: false } as const;
    const finished = {
      ...toRunItem(run),
      status: "succeeded",
      fence: 1,
      attempt: 1,
      finishedAt: NOW,
      checkAt: undefined,
    };
    db.on(UpdateCommand)
      .resolvesOnce({ Attributes: { receiptHandle: "rh-1", final: true } })
      .rejectsOnce(failedOn({ ...finished, finishedAt: NOW - 1 }))
      .rejectsOnce(failedOn(finished));
    expect(await runs.finishRun(job.jobId, NOW, 1, outcome)).toEqual({
      receiptHandle: "rh-1",
      final: true,
      tracked: false,
    });
    // Finished by another completion: refused. By its own write, its answer lost: as recorded.
    expect(await runs.finishRun(job.jobId, NOW, 1, outcome)).toBeUndefined();
    expect(await runs.finishRun(job.jobId, NOW, 1, outcome)).toEqual({
      receiptHandle: undefined,
      final: false,
      tracked: false,
    });
    expect(db).toHaveReceivedCommandWith(UpdateCommand, { ReturnValuesOnConditionCheckFailure: "ALL_OLD" });
    // Not a last run (so the condition says): it leaves the repair index.
    const input = db.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toContain("(attribute_not_exists(#final) OR #final <> :true)");
    expect(input?.UpdateExpression).toMatch(/REMOVE repairKey, checkAt, /);
  });

  it("finishes a last run but keeps its repair-index entry until its job is marked", async () => {
    db.reset();
    db.on(UpdateCommand).resolves({ Attributes: { receiptHandle: "rh-1", final: true } });
    await runs.finishRun(job.jobId, NOW, 1, {
      status: "dead-lettered",
      error: "boom",
      now: NOW,
      final: true,
    });
    const input = db.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toContain("#final = :true");
    expect(input?.UpdateExpression).not.toContain("repairKey");
    expect(input?.UpdateExpression).not.toContain("checkAt");
    expect(input?.ExpressionAttributeValues).toMatchObject({ ":true": true, ":error": "boom" });

    db.resetHistory();
    await runs.settleFinalRun(job.jobId, NOW);
    expect(db).toHaveReceivedCommandWith(UpdateCommand, {
      UpdateExpression: "REMOVE repairKey, checkAt",
      ConditionExpression: "attribute_exists(checkAt) AND NOT #status IN (:pending, :leased)",
    });
    // A run replayed meanwhile is unfinished again: the failed condition is no error.
    db.on(UpdateCommand).rejects(conditionFailed());
    await expect(runs.settleFinalRun(job.jobId, NOW)).resolves.toBeUndefined();
  });

  it("records a never-started, never-replayed pending run as missed and answers it; otherwise nothing", async () => {
    db.on(UpdateCommand)
      .resolvesOnce({ Attributes: { ...toRunItem(run), status: "missed", error: "late" } })
      .rejects(conditionFailed());
    const miss = { reason: "late", now: NOW, final: false };
    expect(await runs.missRun(run.jobId, run.scheduledFor, miss)).toMatchObject({
      runId: run.runId,
      status: "missed",
      error: "late",
    });
    expect(await runs.missRun(run.jobId, run.scheduledFor, miss)).toBeUndefined();
    expect(db).toHaveReceivedCommandWith(UpdateCommand, {
      ConditionExpression:
        "#status = :pending AND attempt = :zero AND attribute_not_exists(replays) AND attribute_not_exists(origin) AND (attribute_not_exists(#final) OR #final <> :true)",
      ReturnValues: "ALL_NEW",
    });
  });
});

describe("DynamoRunStore: a worker's completion", () => {
  it("names the worker's tenants in the condition, and writes nothing for a worker serving none", async () => {
    db.reset();
    db.on(UpdateCommand).resolves({ Attributes: { receiptHandle: "rh", final: true, checkAt: NOW } });
    const outcome = { status: "succeeded", error: undefined, now: NOW, final: true } as const;
    // A last run that was in the repair index stays there until its job is marked.
    expect(await runs.finishRun(job.jobId, NOW, 1, outcome, ["a", "b"])).toEqual({
      receiptHandle: "rh",
      final: true,
      tracked: true,
    });
    const input = db.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toContain("tenant IN (:tenant0, :tenant1)");
    expect(input?.ExpressionAttributeValues).toMatchObject({ ":tenant0": "a", ":tenant1": "b" });
    db.resetHistory();
    expect(await runs.finishRun(job.jobId, NOW, 1, outcome, [])).toBeUndefined();
    expect(db.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});
