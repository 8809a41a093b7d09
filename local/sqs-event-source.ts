import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { localContext } from "./lambda-context";

/**
 * What Lambda's SQS event source mapping does, for the local runtime: long-poll a queue, hand
 * batches to the handler as an SQSEvent, delete the records it did not report as failed, and
 * leave failed ones to come back after their visibility timeout. Like the mapping, it scales:
 * `concurrency` pollers at the least, one more (up to `maxConcurrency`) whenever a poller
 * gets a full batch, and back down as pollers find the queue empty.
 */
export function startSqsEventSource(
  sqs: SQSClient,
  queueUrl: string,
  handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>,
  options: {
    batchSize: number;
    concurrency: number;
    maxConcurrency?: number;
    functionName?: string;
    timeoutMs?: number;
    onError: (error: unknown) => void;
  },
): { stop(): Promise<void> } {
  let stopped = false;
  let active = 0;
  const running = new Set<Promise<void>>();
  const spawn = () => {
    active++;
    const done = poller().finally(() => {
      active--;
      running.delete(done);
    });
    running.add(done);
  };
  const poller = async () => {
    while (!stopped) {
      try {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ["ApproximateReceiveCount"],
          }),
        );
        if (Messages.length === 0) {
          if (active > options.concurrency) return;
          continue;
        }
        if (
          Messages.length === options.batchSize &&
          active < (options.maxConcurrency ?? options.concurrency)
        ) {
          spawn();
        }
        const records = Messages.map(
          (m) =>
            ({
              messageId: m.MessageId ?? "",
              receiptHandle: m.ReceiptHandle ?? "",
              body: m.Body ?? "",
              attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1" },
              messageAttributes: {},
              md5OfBody: m.MD5OfBody ?? "",
              eventSource: "aws:sqs",
              eventSourceARN: queueUrl,
              awsRegion: "us-east-1",
            }) as unknown as SQSRecord,
        );
        const { batchItemFailures } = await handler(
          { Records: records },
          localContext(options.functionName ?? "sweeper", options.timeoutMs ?? 60_000),
        );
        const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier));
        const done = records.filter((r) => !failed.has(r.messageId));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
            }),
          );
        }
      } catch (error) {
        if (!stopped) options.onError(error);
      }
    }
  };
  for (let i = 0; i < options.concurrency; i++) spawn();
  return {
    async stop() {
      stopped = true;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
