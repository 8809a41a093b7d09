import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { localContext } from "./lambda-context";

/**
 * What Lambda's SQS event source mapping does, for the local runtime: long-poll a queue, hand
 * batches to the handler as an SQSEvent, delete the records it did not report as failed, and
 * leave failed ones to come back after their visibility timeout.
 */
export function startSqsEventSource(
  sqs: SQSClient,
  queueUrl: string,
  handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>,
  options: { batchSize: number; concurrency: number; onError: (error: unknown) => void },
): { stop(): Promise<void> } {
  let stopped = false;
  const poller = async () => {
    while (!stopped) {
      try {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: 1,
          }),
        );
        if (Messages.length === 0) continue;
        const records = Messages.map(
          (m) =>
            ({
              messageId: m.MessageId ?? "",
              receiptHandle: m.ReceiptHandle ?? "",
              body: m.Body ?? "",
              attributes: {},
              messageAttributes: {},
              md5OfBody: m.MD5OfBody ?? "",
              eventSource: "aws:sqs",
              eventSourceARN: queueUrl,
              awsRegion: "us-east-1",
            }) as unknown as SQSRecord,
        );
        const { batchItemFailures } = await handler({ Records: records }, localContext("sweeper", 60_000));
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
  const pollers = Array.from({ length: options.concurrency }, poller);
  return {
    async stop() {
      stopped = true;
      await Promise.allSettled(pollers);
    },
  };
}
