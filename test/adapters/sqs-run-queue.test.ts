import {
  ChangeMessageVisibilityCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { SqsRunQueue } from "../../lambdas/adapters/sqs/sqs-run-queue";

const sqs = mockClient(SQSClient);
const queue = new SqsRunQueue(new SQSClient({ region: "us-east-1" }), "https://sqs.local/q");
const message = (i: number) => ({
  message: { runId: `r${i}`, jobId: "j", scheduledFor: i, type: "x" },
  delaySeconds: i,
});

beforeEach(() => sqs.reset());

describe("SqsRunQueue", () => {
  it("sends in batches of ten, each message with its own delay", async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    await queue.send(Array.from({ length: 15 }, (_, i) => message(i)));
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 2);
    const second = sqs.commandCalls(SendMessageBatchCommand)[1]?.args[0].input;
    expect(second?.Entries).toHaveLength(5);
    expect(second?.Entries?.[4]).toMatchObject({
      DelaySeconds: 14,
      MessageBody: JSON.stringify(message(14).message),
    });
  });

  it("fails loudly when SQS refuses part of a batch, so the caller does not move the job on", async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: "0", Code: "InternalError", SenderFault: false, Message: "try again" }],
    });
    await expect(queue.send([message(1)])).rejects.toThrow(/refused 1 of 1.*InternalError/);
  });

  it("receives with the lease as visibility timeout and parses each body, unreadable ones as undefined", async () => {
    sqs.on(ReceiveMessageCommand).resolves({
      Messages: [
        { ReceiptHandle: "a", Body: JSON.stringify(message(1).message) },
        { ReceiptHandle: "b", Body: "{not json" },
        { ReceiptHandle: "c", Body: JSON.stringify({ runId: 5 }) },
      ],
    });
    const received = await queue.receive(25, 30, 2);
    expect(sqs).toHaveReceivedCommandWith(ReceiveMessageCommand, {
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 30,
      WaitTimeSeconds: 2,
    });
    expect(received).toEqual([
      { message: message(1).message, receiptHandle: "a" },
      { message: undefined, receiptHandle: "b" },
      { message: undefined, receiptHandle: "c" },
    ]);
  });

  it("fills a request for more than 10 with parallel receives that do not wait, once a poll comes back full", async () => {
    const full = Array.from({ length: 10 }, (_, i) => ({
      ReceiptHandle: `r${i}`,
      Body: JSON.stringify(message(i).message),
    }));
    sqs
      .on(ReceiveMessageCommand)
      .resolvesOnce({ Messages: full })
      .resolves({ Messages: full.slice(0, 3) });
    const received = await queue.receive(25, 30, 2);
    expect(received).toHaveLength(16);
    expect(sqs).toHaveReceivedCommandTimes(ReceiveMessageCommand, 3);
    expect(sqs).toHaveReceivedNthCommandWith(ReceiveMessageCommand, 2, {
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
    });
    expect(sqs).toHaveReceivedNthCommandWith(ReceiveMessageCommand, 3, {
      MaxNumberOfMessages: 5,
      WaitTimeSeconds: 0,
    });
  });

  it("does not ask again when the long poll comes back short", async () => {
    sqs.on(ReceiveMessageCommand).resolves({ Messages: [] });
    expect(await queue.receive(100, 30, 1)).toEqual([]);
    expect(sqs).toHaveReceivedCommandTimes(ReceiveMessageCommand, 1);
  });

  it("releases a message by making it visible at once", async () => {
    sqs.on(ChangeMessageVisibilityCommand).resolves({});
    await queue.release("rh");
    expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, {
      ReceiptHandle: "rh",
      VisibilityTimeout: 0,
    });
  });
});
