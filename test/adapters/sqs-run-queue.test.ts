import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { LaneDirectory } from "../../lambdas/adapters/sqs/lane-directory";
import { MESSAGE_GROUP_ID_PATTERN, messageGroupIdOf } from "../../lambdas/adapters/sqs/message-group";
import { MAX_LANES_PER_RECEIVE, SqsRunQueue } from "../../lambdas/adapters/sqs/sqs-run-queue";
import { laneKeyOf } from "../../lambdas/core/ports";

const sqs = mockClient(SQSClient);
const db = mockClient(DynamoDBDocumentClient);
const TEMPLATE = "https://sqs.local/000000000000/jobsched-runs";
const PUSH_QUEUE = "https://sqs.local/000000000000/jobsched-push";
const lane = (n: number) => `https://sqs.local/000000000000/jobsched-runs-lane${n}`;

function newQueue() {
  const sqsClient = new SQSClient({ region: "us-east-1" });
  const docClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" }));
  return new SqsRunQueue(
    sqsClient,
    new LaneDirectory(sqsClient, docClient, "t", TEMPLATE),
    PUSH_QUEUE,
    async () => undefined,
  );
}

const message = (i: number, tenant = "a", type = "x") => ({
  message: { runId: `r${i}`, jobId: "j", scheduledFor: i, tenant, type },
  delaySeconds: i,
});

const messages = (count: number, queue = 0) =>
  Array.from({ length: count }, (_, i) => ({
    ReceiptHandle: `h${queue}-${i}`,
    Body: JSON.stringify(message(i).message),
  }));

const ask = (
  max: number,
  visibilitySeconds: number,
  waitSeconds: number,
  tenants = Array.from({ length: 20 }, (_, i) => `t${i}`),
) => ({
  types: ["x"],
  tenants,
  max,
  visibilitySeconds,
  waitSeconds,
  topUpDueBefore: Number.MAX_SAFE_INTEGER,
});

/** Lanes known to the directory for every type. */
function knownLanes(count: number) {
  db.on(QueryCommand).resolves({
    Items: Array.from({ length: count }, (_, i) => ({ queueUrl: lane(i), tenant: `t${i}` })),
  });
}

beforeEach(() => {
  sqs.reset();
  db.reset();
  sqs
    .on(GetQueueAttributesCommand)
    .resolves({ Attributes: { VisibilityTimeout: "30", RedrivePolicy: "{}" } });
  sqs.on(CreateQueueCommand).callsFake((input: { QueueName: string }) => ({
    QueueUrl: `https://sqs.local/000000000000/${input.QueueName}`,
  }));
  db.on(PutCommand).resolves({});
});

describe("SqsRunQueue: sending to lanes", () => {
  it("creates one lane per (tenant, type) from the template's attributes, records it, and batches by ten", async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    const queue = newQueue();
    await queue.send([
      ...Array.from({ length: 15 }, (_, i) => message(i)),
      message(20, "b"),
      message(21, "a", "y"),
    ]);
    const created = sqs.commandCalls(CreateQueueCommand).map((c) => c.args[0].input);
    expect(created).toHaveLength(3);
    expect(created[0]).toMatchObject({
      QueueName: expect.stringMatching(/^jobsched-runs_[0-9a-f]{16}$/),
      Attributes: { VisibilityTimeout: "30", RedrivePolicy: "{}" },
    });
    expect(new Set(created.map((c) => c.QueueName)).size).toBe(3);
    expect(db.commandCalls(PutCommand).map((c) => c.args[0].input.Item?.pk)).toEqual(
      expect.arrayContaining(["LANE#x", "LANE#y"]),
    );
    const batches = sqs.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
    expect(batches.map((b) => b.Entries?.length).sort()).toEqual([1, 1, 10, 5].sort());
    const tenantA = batches
      .filter((b) => b.QueueUrl === batches[0]?.QueueUrl)
      .flatMap((b) => b.Entries ?? []);
    expect(tenantA.at(-1)).toMatchObject({
      DelaySeconds: 14,
      MessageBody: JSON.stringify(message(14).message),
    });

    await queue.send([message(30)]); // a lane is created once per process
    expect(sqs).toHaveReceivedCommandTimes(CreateQueueCommand, 3);
  });

  it("fails loudly when SQS refuses part of a batch, so the caller does not move the job on", async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: "0", Code: "InternalError", SenderFault: false, Message: "try again" }],
    });
    await expect(newQueue().send([message(1)])).rejects.toThrow(/refused 1 of 1.*InternalError/);
  });
});

describe("SqsRunQueue: the push queue is a fair queue (decision 0039)", () => {
  it("sends push runs with their tenant as MessageGroupId, and lane runs with none", async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    const role = "arn:aws:iam::111122223333:role/billing";
    await newQueue().send([
      ...Array.from({ length: 12 }, (_, i) => message(i, role, "@https")),
      message(20, "b", "@lambda"),
      message(21, "a", "x"),
    ]);
    const batches = sqs.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
    const push = batches.filter((b) => b.QueueUrl === PUSH_QUEUE).flatMap((b) => b.Entries ?? []);
    expect(push).toHaveLength(13);
    expect(push.filter((e) => e.MessageGroupId === role)).toHaveLength(12);
    expect(push.filter((e) => e.MessageGroupId === "b")).toHaveLength(1);
    const lanes = batches.filter((b) => b.QueueUrl !== PUSH_QUEUE).flatMap((b) => b.Entries ?? []);
    expect(lanes).toHaveLength(1);
    expect(lanes[0]?.MessageGroupId).toBeUndefined();
  });

  it("names a tenant SQS would refuse as a group by a stable hash of it, distinct per tenant", () => {
    const long = `arn:aws:iam::111122223333:role/${"p/".repeat(60)}worker`;
    const spaced = "Billing team";
    for (const tenant of [long, spaced, "", "t\u00e9nant"]) {
      const id = messageGroupIdOf(tenant);
      expect(id).toMatch(MESSAGE_GROUP_ID_PATTERN);
      expect(id).toBe(messageGroupIdOf(tenant));
    }
    expect(messageGroupIdOf(long)).not.toBe(messageGroupIdOf(`${long}2`));
    // A tenant that fits is its own group, readable in SQS's metrics and answers.
    expect(messageGroupIdOf("arn:aws:iam::111122223333:role/billing")).toBe(
      "arn:aws:iam::111122223333:role/billing",
    );
    expect(MESSAGE_GROUP_ID_PATTERN.test("x".repeat(129))).toBe(false);
    expect(MESSAGE_GROUP_ID_PATTERN.test("a b")).toBe(false);
  });
});

describe("SqsRunQueue: receiving fairly", () => {
  it("takes a fair share from each lane of the requested types, with the lease as visibility", async () => {
    knownLanes(2);
    sqs.on(ReceiveMessageCommand, { QueueUrl: lane(0) }).resolves({ Messages: messages(10, 0) });
    sqs.on(ReceiveMessageCommand, { QueueUrl: lane(1) }).resolves({ Messages: messages(3, 1) });
    const received = await newQueue().receive(ask(20, 37, 1));
    const asked = sqs.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input);
    expect(asked.slice(0, 2)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          QueueUrl: lane(0),
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 37,
          WaitTimeSeconds: 0,
        }),
        expect.objectContaining({ QueueUrl: lane(1), MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      ]),
    );
    // Lane 0 filled its share and is topped up with what lane 1 left: 7 more.
    expect(asked[2]).toMatchObject({ QueueUrl: lane(0), MaxNumberOfMessages: 7 });
    expect(received).toHaveLength(23);
    const first = received.find((r) => r.receiptHandle === `${lane(0)} h0-0`);
    expect(first?.message).toEqual(message(0).message);
  });

  it("tops a full lane up only when the runs it gave are due: runs leased ahead come at fair shares", async () => {
    knownLanes(2);
    sqs.on(ReceiveMessageCommand, { QueueUrl: lane(0) }).resolves({ Messages: messages(10, 0) });
    sqs.on(ReceiveMessageCommand, { QueueUrl: lane(1) }).resolves({ Messages: [] });
    // The messages are due at 0-9 ms: not before 5, so lane 0 is not topped up.
    const received = await newQueue().receive({ ...ask(20, 37, 0), topUpDueBefore: 5 });
    expect(sqs.commandCalls(ReceiveMessageCommand)).toHaveLength(2);
    expect(received).toHaveLength(10);
  });

  it("long-polls every lane at once only when nothing was ready, and parses unreadable bodies as undefined", async () => {
    knownLanes(1);
    sqs
      .on(ReceiveMessageCommand)
      .resolvesOnce({})
      .resolves({ Messages: [{ ReceiptHandle: "b", Body: "{not json" }] });
    const received = await newQueue().receive(ask(5, 30, 2));
    expect(sqs.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input.WaitTimeSeconds)).toEqual([
      0, 2,
    ]);
    expect(received).toEqual([{ message: undefined, receiptHandle: `${lane(0)} b`, receiveCount: 1 }]);
    // SQS's receive count comes with each message (the lease step recycles worn messages).
    expect(sqs.commandCalls(ReceiveMessageCommand)[0]?.args[0].input.MessageSystemAttributeNames).toEqual([
      "ApproximateReceiveCount",
    ]);
  });

  it("polls only the lanes of the tenants the worker serves", async () => {
    knownLanes(3);
    sqs.on(ReceiveMessageCommand).resolves({});
    await newQueue().receive(ask(10, 30, 0, ["t1"]));
    expect(new Set(sqs.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input.QueueUrl))).toEqual(
      new Set([lane(1)]),
    );
  });

  it("long-polls several lanes a second at a time: a run in one lane never waits out an empty other's wait", async () => {
    knownLanes(2);
    let polls = 0;
    sqs.on(ReceiveMessageCommand).callsFake((input: { QueueUrl: string; WaitTimeSeconds: number }) => {
      polls += 1;
      // Lane 0's run becomes visible during the third one-second poll; lane 1 stays empty.
      return input.QueueUrl === lane(0) && polls >= 5 ? { Messages: messages(1) } : {};
    });
    const received = await newQueue().receive(ask(10, 30, 20));
    const waits = sqs.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input.WaitTimeSeconds);
    expect(waits.slice(0, 2)).toEqual([0, 0]); // the pass that does not wait
    expect(waits.slice(2).every((w) => w === 1)).toBe(true); // never a 20 s poll that lane 0 would wait on
    expect(received).toHaveLength(1);
    expect(waits.length).toBeLessThanOrEqual(2 + 2 * 3 + 1); // stopped as soon as a lane had a run
  });

  it("polls at most MAX_LANES_PER_RECEIVE lanes, a different set each time", async () => {
    knownLanes(MAX_LANES_PER_RECEIVE + 5);
    sqs.on(ReceiveMessageCommand).resolves({});
    const queue = newQueue();
    await queue.receive(ask(100, 30, 0));
    const first = new Set(sqs.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input.QueueUrl));
    expect(first.size).toBe(MAX_LANES_PER_RECEIVE);
    sqs.resetHistory();
    await queue.receive(ask(100, 30, 0));
    const second = new Set(sqs.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input.QueueUrl));
    expect(second).not.toEqual(first);
  });

  it("polls first the lane a worker's bell rang on (decision 0049), even with one run asked for among many lanes", async () => {
    knownLanes(MAX_LANES_PER_RECEIVE + 5);
    sqs.on(ReceiveMessageCommand).resolves({});
    const queue = newQueue();
    for (const rang of [3, 14, 7]) {
      sqs.resetHistory();
      await queue.receive({ ...ask(1, 30, 0), first: laneKeyOf({ tenant: `t${rang}`, type: "x" }) });
      // Its share comes first; what the request has room for after it may reach the next lane.
      expect(sqs.commandCalls(ReceiveMessageCommand)[0]?.args[0].input.QueueUrl).toBe(lane(rang));
    }
  });

  it("skips a lane whose queue is gone, and waits out the poll when there are no lanes", async () => {
    knownLanes(1);
    sqs.on(ReceiveMessageCommand).rejects(Object.assign(new Error("gone"), { name: "QueueDoesNotExist" }));
    expect(await newQueue().receive(ask(5, 30, 0))).toEqual([]);
    db.on(QueryCommand).resolves({ Items: [] });
    let slept = 0;
    const sqsClient = new SQSClient({ region: "us-east-1" });
    const docClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" }));
    const empty = new SqsRunQueue(
      sqsClient,
      new LaneDirectory(sqsClient, docClient, "t", TEMPLATE),
      PUSH_QUEUE,
      async (ms) => {
        slept += ms;
      },
    );
    expect(await empty.receive(ask(5, 30, 3))).toEqual([]);
    expect(slept).toBe(3000);
  });

  it("rethrows other receive errors", async () => {
    knownLanes(1);
    sqs.on(ReceiveMessageCommand).rejects(new Error("throttled"));
    await expect(newQueue().receive(ask(5, 30, 0))).rejects.toThrow("throttled");
  });
});

describe("SqsRunQueue: handles", () => {
  it("releases, extends and deletes on the lane the message came from", async () => {
    sqs.on(ChangeMessageVisibilityCommand).resolves({});
    sqs.on(DeleteMessageCommand).resolves({});
    const queue = newQueue();
    await queue.release(`${lane(3)} rh`);
    await queue.extend(`${lane(3)} rh`, 45);
    await queue.delete(`${lane(3)} rh`);
    expect(sqs.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input)).toEqual([
      { QueueUrl: lane(3), ReceiptHandle: "rh", VisibilityTimeout: 0 },
      { QueueUrl: lane(3), ReceiptHandle: "rh", VisibilityTimeout: 45 },
    ]);
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageCommand, { QueueUrl: lane(3), ReceiptHandle: "rh" });
  });

  it("hides many messages in one batch per lane and ten at most, ignoring entries SQS refuses", async () => {
    sqs
      .on(ChangeMessageVisibilityBatchCommand)
      .resolves({ Successful: [], Failed: [{ Id: "0", Code: "x", SenderFault: true }] });
    const queue = newQueue();
    const changes = [
      ...Array.from({ length: 12 }, (_, i) => ({ receiptHandle: `${lane(1)} a${i}`, seconds: i })),
      { receiptHandle: `${lane(2)} b`, seconds: 3 },
    ];
    // Each refused entry is reported by its handle: entry 0 of every call.
    expect(await queue.hide(changes)).toEqual([`${lane(1)} a0`, `${lane(1)} a10`, `${lane(2)} b`]);
    expect(await queue.hide([])).toEqual([]);
    const calls = sqs.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => [c.QueueUrl, c.Entries?.length])).toEqual([
      [lane(1), 10],
      [lane(1), 2],
      [lane(2), 1],
    ]);
    expect(calls[1]?.Entries).toEqual([
      { Id: "0", ReceiptHandle: "a10", VisibilityTimeout: 10 },
      { Id: "1", ReceiptHandle: "a11", VisibilityTimeout: 11 },
    ]);
  });

  it("deletes many messages in one batch per lane, reporting refused entries and failed calls", async () => {
    sqs
      .on(DeleteMessageBatchCommand, { QueueUrl: lane(1) })
      .resolves({ Successful: [], Failed: [{ Id: "1", Code: "ReceiptHandleIsInvalid", SenderFault: true }] })
      .on(DeleteMessageBatchCommand, { QueueUrl: lane(2) })
      .rejects(new Error("throttled"));
    const failed = await newQueue().deleteBatch([`${lane(1)} a`, `${lane(1)} b`, `${lane(2)} c`]);
    expect(failed).toEqual([`${lane(1)} b`, `${lane(2)} c`]);
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageBatchCommand, {
      QueueUrl: lane(1),
      Entries: [
        { Id: "0", ReceiptHandle: "a" },
        { Id: "1", ReceiptHandle: "b" },
      ],
    });
    expect(await newQueue().deleteBatch([])).toEqual([]);
  });
});
