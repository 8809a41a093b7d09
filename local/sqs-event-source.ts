import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { localContext } from "./lambda-context";

/**
 * What Lambda's SQS event source mapping does, for the local runtime: long-poll a queue, hand
 * batches to the handler as an SQSEvent, delete the records it did not report as failed, and
 * leave failed ones to come back after their visibility timeout.
 *
 * As the mapping does, its pollers keep receiving while invocations run: each batch is one
 * invocation, up to `maxConcurrency` at once (default `concurrency`, the number of pollers); a
 * poller with a batch in hand waits for a free invocation. The mapping in AWS grows to its
 * maximum concurrency over a minute or so; this one is there at once (decision 0029).
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
  const maxInvocations = options.maxConcurrency ?? options.concurrency;
  const invocations = new Set<Promise<void>>();

  const invoke = async (messages: readonly Message[]) => {
    const records = messages.map(
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
  };

  const poller = async () => {
    while (!stopped) {
      try {
        while (invocations.size >= maxInvocations && !stopped) await Promise.race(invocations);
        if (stopped) return;
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ["ApproximateReceiveCount"],
          }),
        );
        if (Messages.length === 0) continue;
        const invocation = invoke(Messages)
          .catch((error: unknown) => {
            if (!stopped) options.onError(error);
          })
          .finally(() => invocations.delete(invocation));
        invocations.add(invocation);
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
      await Promise.allSettled([...invocations]);
    },
  };
}
