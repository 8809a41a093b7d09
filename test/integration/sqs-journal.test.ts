import { appendFileSync, existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { afterEach, describe, expect, it } from "vitest";
import { createSqsClient } from "../../lambdas/adapters/clients";
import { startSqs } from "../../local/emulators";
import { withSqsJournal } from "../../local/sqs-journal";

/**
 * The local queue's journal (decision 0051): what SQS accepted and nobody deleted is there
 * again after the emulator restarts, empty, on another port.
 */
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function emulator(journal: string, now: () => number = Date.now) {
  const sqs = await startSqs();
  closers.push(sqs.close);
  const client = createSqsClient({ region: "us-east-1", sqsEndpoint: sqs.endpoint });
  const journaled = withSqsJournal(client, journal, now);
  return { client, journaled };
}

async function receiveAll(client: SQSClient, url: string) {
  const { Messages } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 60,
      MessageAttributeNames: ["All"],
    }),
  );
  return Messages ?? [];
}

describe("the local SQS journal", () => {
  it("sends again after a restart what was sent and not deleted, to its queue made again as it was", async () => {
    const journal = join(mkdtempSync(join(tmpdir(), "sqs-journal-")), "sqs-journal.jsonl");
    const first = await emulator(journal);
    expect(await first.journaled.restore()).toBe(0);
    const attributes = { VisibilityTimeout: "45", MessageRetentionPeriod: "86400" };
    const { QueueUrl: url } = await first.client.send(
      new CreateQueueCommand({ QueueName: "lane-a", Attributes: attributes }),
    );
    if (!url) throw new Error("no queue");
    await first.client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: ["one", "two", "three", "four"].map((body, i) => ({
          Id: String(i),
          MessageBody: body,
          MessageGroupId: "tenant-1",
          MessageAttributes: { kind: { DataType: "String", StringValue: body } },
        })),
      }),
    );
    await first.client.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: "later", DelaySeconds: 600 }),
    );
    const received = await receiveAll(first.client, url);
    expect(received.map((m) => m.Body).sort()).toEqual(["four", "one", "three", "two"]);
    const handle = (body: string) => received.find((m) => m.Body === body)?.ReceiptHandle;
    await first.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: handle("one") }));
    await first.client.send(
      new DeleteMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: "x", ReceiptHandle: handle("two") }] }),
    );
    // "three" and "four" are in flight when the runtime dies: visible again at once after it.

    const second = await emulator(journal);
    expect(await second.journaled.restore()).toBe(3);
    const { QueueUrl: again } = await second.client.send(new CreateQueueCommand({ QueueName: "lane-a" }));
    if (!again) throw new Error("no queue");
    const { Attributes } = await second.client.send(
      new GetQueueAttributesCommand({ QueueUrl: again, AttributeNames: ["VisibilityTimeout"] }),
    );
    expect(Attributes?.VisibilityTimeout).toBe("45");
    const back = await receiveAll(second.client, again);
    expect(back.map((m) => m.Body).sort()).toEqual(["four", "three"]); // "later" still delayed
    expect(back[0]?.MessageAttributes?.kind?.StringValue).toBe(back[0]?.Body);

    // The journal was started anew with what is live; a third start finds the same three.
    await second.client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: again,
        Entries: back.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
    const third = await emulator(journal);
    expect(await third.journaled.restore()).toBe(1);
  });

  it("restores what a restore killed half-way had not sent yet, and queues that are gone take their messages", async () => {
    const journal = join(mkdtempSync(join(tmpdir(), "sqs-journal-")), "sqs-journal.jsonl");
    const first = await emulator(journal);
    await first.journaled.restore();
    const { QueueUrl: url } = await first.client.send(new CreateQueueCommand({ QueueName: "lane-c" }));
    await first.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "kept" }));
    // A journal line for a queue neither journaled nor made by the bootstrap (a prefix changed).
    appendFileSync(
      journal,
      `${JSON.stringify({ op: "sent", id: "x-1", queue: "gone-queue", body: "lost", visibleAt: 0 })}\n`,
    );
    // The restore that read it was killed after setting it aside, before sending anything.
    renameSync(journal, `${journal}.restoring`);
    writeFileSync(journal, "");
    const second = await emulator(journal);
    expect(await second.journaled.restore()).toBe(1);
    const { QueueUrl: again } = await second.client.send(new CreateQueueCommand({ QueueName: "lane-c" }));
    if (!again) throw new Error("no queue");
    expect((await receiveAll(second.client, again)).map((m) => m.Body)).toEqual(["kept"]);
    expect(existsSync(`${journal}.restoring`)).toBe(false);
  });

  it("restores a delayed message at what is left of its delay, and skips a line cut short", async () => {
    const journal = join(mkdtempSync(join(tmpdir(), "sqs-journal-")), "sqs-journal.jsonl");
    let clock = Date.now();
    const first = await emulator(journal, () => clock);
    await first.journaled.restore();
    const { QueueUrl: url } = await first.client.send(new CreateQueueCommand({ QueueName: "lane-b" }));
    await first.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "soon", DelaySeconds: 30 }));
    writeFileSync(journal, `${readFileSync(journal, "utf8")}{"op":"sent","id":"cut`);
    clock += 29_000; // a second of its delay left at the restart
    const second = await emulator(journal, () => clock);
    expect(await second.journaled.restore()).toBe(1);
    const { QueueUrl: again } = await second.client.send(new CreateQueueCommand({ QueueName: "lane-b" }));
    if (!again) throw new Error("no queue");
    expect(await receiveAll(second.client, again)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await receiveAll(second.client, again)).map((m) => m.Body)).toEqual(["soon"]);
  });
});
