import { ConditionalCheckFailedException, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { LANE_TOUCH_MS, LaneDirectory } from "../../lambdas/adapters/sqs/lane-directory";
import { CLAIM_EXPIRES_MS, LaneJanitor } from "../../lambdas/adapters/sqs/lane-janitor";
import { LANE_REGISTRY_SHARDS, laneQueueName } from "../../lambdas/adapters/sqs/lane-keys";
import { placeholderProblems } from "../support/expression-rules";

/** The lane registry's requests against mocked DynamoDB and SQS (issue 15, decision 0019). */
const sqs = mockClient(SQSClient);
const db = mockClient(DynamoDBDocumentClient);
const TEMPLATE = "https://sqs.local/000000000000/jobsched-runs";
const NOW = Date.UTC(2026, 10, 2, 9, 7, 0);
const conditionFailed = () => new ConditionalCheckFailedException({ message: "no", $metadata: {} });
const sqsClient = () => new SQSClient({ region: "us-east-1" });
const docClient = () => DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" }));
const entry = (n: number, extra: Record<string, unknown> = {}) => ({
  pk: "LANES#00",
  sk: `t\nx${n}`,
  tenant: "t",
  type: `x${n}`,
  queueUrl: `${TEMPLATE}_lane${n}`,
  generation: 0,
  lastUsedAt: NOW - 10 * 86_400_000,
  ...extra,
});

beforeEach(() => {
  sqs.reset();
  db.reset();
  db.on(QueryCommand).resolves({ Items: [] });
});

function expectValidExpressions() {
  for (const call of db.calls()) {
    expect(placeholderProblems(call.args[0].input as Record<string, unknown>)).toEqual([]);
  }
}

describe("LaneDirectory: marking lanes used", () => {
  it("touches a lane on first use and again only after LANE_TOUCH_MS, serving the URL from memory between", async () => {
    db.on(UpdateCommand).resolves({ Attributes: { queueUrl: `${TEMPLATE}_a` } });
    let now = NOW;
    const lanes = new LaneDirectory(sqsClient(), docClient(), "t", TEMPLATE, () => now);
    expect(await lanes.laneFor("t", "x")).toBe(`${TEMPLATE}_a`);
    now += LANE_TOUCH_MS - 1;
    await lanes.laneFor("t", "x");
    expect(db.commandCalls(UpdateCommand)).toHaveLength(1);
    now += 1;
    await lanes.laneFor("t", "x");
    const touches = db.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(touches).toHaveLength(2);
    expect(touches[1]).toMatchObject({
      UpdateExpression: "SET lastUsedAt = :now REMOVE retiringAt",
      ConditionExpression: "attribute_exists(queueUrl) AND attribute_not_exists(deleting)",
      ExpressionAttributeValues: { ":now": now },
    });
    expect(sqs.calls()).toHaveLength(0);
    expectValidExpressions();
  });

  it("gives up after three changed entries in a row, so a caller's send fails instead of spinning", async () => {
    db.on(UpdateCommand).rejects(conditionFailed());
    db.on(GetCommand).resolves({ Item: entry(1, { deleting: true }) });
    // The lookup record is written; the registry entry's conditional put finds it changed.
    db.on(PutCommand).callsFake((input: { ConditionExpression?: string }) => {
      if (input.ConditionExpression) throw conditionFailed();
      return {};
    });
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: {} });
    sqs.on(CreateQueueCommand).callsFake((input: { QueueName: string }) => ({
      QueueUrl: `https://sqs.local/000000000000/${input.QueueName}`,
    }));
    const lanes = new LaneDirectory(sqsClient(), docClient(), "t", TEMPLATE, () => NOW);
    await expect(lanes.laneFor("t", "x")).rejects.toThrow(/kept changing/);
    // Each try created the next generation's queue (SQS answers the same URL for the same name).
    const names = sqs.commandCalls(CreateQueueCommand).map((c) => c.args[0].input.QueueName);
    expect(names).toHaveLength(3);
    for (const name of names) expect(name).toMatch(/^jobsched-runs_[0-9a-f]{16}-1$/);
    expectValidExpressions();
  });
});

describe("LaneDirectory: a lane a listening worker found deleted (decision 0049)", () => {
  it("makes every lane of the worker's again on the next open when one of them is gone; another lane's URL changes nothing", async () => {
    db.on(UpdateCommand).callsFake((input: { Key: { sk: string } }) => ({
      Attributes: { queueUrl: `${TEMPLATE}_${input.Key.sk.replace("\n", "-")}` },
    }));
    db.on(GetCommand).callsFake((input: { Key: { sk: string } }) => ({
      Item: { ...entry(1), sk: input.Key.sk, type: input.Key.sk.split("\n")[1] },
    }));
    db.on(PutCommand).resolves({});
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: {} });
    sqs.on(CreateQueueCommand).callsFake((input: { QueueName: string }) => ({
      QueueUrl: `https://sqs.local/000000000000/${input.QueueName}`,
    }));
    const lanes = new LaneDirectory(sqsClient(), docClient(), "t", TEMPLATE, () => NOW);
    const pairs = [
      { tenant: "t", type: "x" },
      { tenant: "t", type: "y" },
    ];
    const before = await Promise.all(pairs.map((p) => lanes.laneFor(p.tenant, p.type)));
    lanes.forgetIfGone(pairs, [
      `${TEMPLATE}_0123456789abcdef`,
      "not a lane",
      laneQueueName(TEMPLATE, "u", "x"),
    ]);
    expect(await Promise.all(pairs.map((p) => lanes.laneFor(p.tenant, p.type)))).toEqual(before); // from memory
    expect(sqs.commandCalls(CreateQueueCommand)).toHaveLength(0);
    const own = `https://sqs.local/000000000000/${lanes.laneName("t", "x")}-4`;
    lanes.forgetIfGone(pairs, [own]);
    await Promise.all(pairs.map((p) => lanes.laneFor(p.tenant, p.type)));
    // Both made again under their live entries' generation, without trusting the entries' URLs.
    expect(sqs.commandCalls(CreateQueueCommand).map((c) => c.args[0].input.QueueName)).toEqual([
      laneQueueName(TEMPLATE, "t", "x"),
      laneQueueName(TEMPLATE, "t", "y"),
    ]);
    expectValidExpressions();
  });
});

describe("LaneJanitor", () => {
  const janitor = () => new LaneJanitor(sqsClient(), docClient(), "t");

  it("reads every registry partition, and stops at its budget", async () => {
    const all = await janitor().retireIdle(NOW, NOW, 60_000);
    expect(all).toEqual({ examined: 0, retired: [], kept: 0, errors: [], finished: true });
    expect(db.commandCalls(QueryCommand)).toHaveLength(LANE_REGISTRY_SHARDS);

    db.resetHistory();
    const none = await janitor().retireIdle(NOW, NOW, 0);
    expect(none.finished).toBe(false);
    expect(db.commandCalls(QueryCommand)).toHaveLength(0);
  });

  it("goes on past a lane whose deletion fails, naming it; deletes the others", async () => {
    db.on(QueryCommand, { ExpressionAttributeValues: { ":pk": "LANES#00" } }).resolves({
      Items: [entry(1), entry(2)],
    });
    db.on(UpdateCommand).resolves({});
    db.on(DeleteCommand).resolves({});
    sqs.on(GetQueueAttributesCommand, { QueueUrl: `${TEMPLATE}_lane1` }).rejects(new Error("throttled"));
    sqs.on(GetQueueAttributesCommand, { QueueUrl: `${TEMPLATE}_lane2` }).resolves({
      Attributes: {
        ApproximateNumberOfMessages: "0",
        ApproximateNumberOfMessagesNotVisible: "0",
        ApproximateNumberOfMessagesDelayed: "0",
      },
    });
    sqs.on(DeleteQueueCommand).resolves({});

    const result = await janitor().retireIdle(NOW - 86_400_000, NOW, 60_000);

    expect(result.retired).toEqual([{ tenant: "t", type: "x2" }]);
    expect(result.errors).toEqual([expect.stringMatching(/^t\/x1: .*throttled/)]);
    expect(sqs.commandCalls(DeleteQueueCommand).map((c) => c.args[0].input.QueueUrl)).toEqual([
      `${TEMPLATE}_lane2`,
    ]);
    const steps = db.commandCalls(UpdateCommand).map((c) => c.args[0].input.UpdateExpression);
    expect(steps).toEqual([
      "SET retiringAt = :now", // x1's claim (its check then failed)
      "SET retiringAt = :now",
      "SET deleting = :yes REMOVE retiringAt",
      "SET deletedAt = :now REMOVE queueUrl, deleting",
    ]);
    expectValidExpressions();
  });

  it("leaves lanes used since the cut-off, and claims held by a live janitor; takes over a stale claim", async () => {
    db.on(QueryCommand, { ExpressionAttributeValues: { ":pk": "LANES#00" } }).resolves({
      Items: [
        entry(1, { lastUsedAt: NOW - 1_000 }),
        entry(2, { retiringAt: NOW - CLAIM_EXPIRES_MS + 1 }),
        entry(3, { retiringAt: NOW - CLAIM_EXPIRES_MS }),
      ],
    });
    db.on(UpdateCommand).rejects(conditionFailed()); // a sender got there first
    const result = await janitor().retireIdle(NOW - 86_400_000, NOW, 60_000);
    expect(result).toMatchObject({ examined: 3, retired: [], kept: 0, errors: [] });
    const claims = db.commandCalls(UpdateCommand).map((c) => c.args[0].input.Key?.sk);
    expect(claims).toEqual(["t\nx3"]);
    expect(sqs.calls()).toHaveLength(0);
  });
});
