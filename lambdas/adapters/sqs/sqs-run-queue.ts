import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { z } from "zod";
import type { ReceivedRunMessage, RunMessage, RunQueue } from "../../core/ports";

/** SQS takes at most 10 messages per batch call. */
const BATCH = 10;

const runMessageSchema = z.object({
  runId: z.string(),
  jobId: z.string(),
  scheduledFor: z.number(),
  type: z.string(),
});

function parseRunMessage(body: string | undefined): RunMessage | undefined {
  try {
    const parsed = runMessageSchema.safeParse(JSON.parse(body ?? ""));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** RunQueue on one SQS standard queue; the visibility timeout of a received message is the lease. */
export class SqsRunQueue implements RunQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>): Promise<void> {
    for (let start = 0; start < messages.length; start += BATCH) {
      const batch = messages.slice(start, start + BATCH);
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map(({ message, delaySeconds }, i) => ({
            Id: String(i),
            MessageBody: JSON.stringify(message),
            DelaySeconds: delaySeconds,
          })),
        }),
      );
      const failed = result.Failed ?? [];
      if (failed.length > 0) {
        const reasons = failed.map((f) => `${f.Code ?? "?"}: ${f.Message ?? ""}`).join("; ");
        throw new Error(`SQS refused ${failed.length} of ${batch.length} run messages (${reasons})`);
      }
    }
  }

  /**
   * Receives up to `max` messages: one long poll, and when that comes back full (a backlog),
   * the rest in parallel receives that do not wait.
   */
  async receive(max: number, visibilitySeconds: number, waitSeconds: number): Promise<ReceivedRunMessage[]> {
    const first = await this.receiveBatch(Math.min(max, BATCH), visibilitySeconds, waitSeconds);
    if (first.length < BATCH || max <= BATCH) return first;
    const more = await Promise.all(
      Array.from({ length: Math.ceil((max - BATCH) / BATCH) }, (_, i) =>
        this.receiveBatch(Math.min(BATCH, max - BATCH * (i + 1)), visibilitySeconds, 0),
      ),
    );
    return [...first, ...more.flat()];
  }

  private async receiveBatch(
    count: number,
    visibilitySeconds: number,
    waitSeconds: number,
  ): Promise<ReceivedRunMessage[]> {
    const { Messages } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: count,
        VisibilityTimeout: visibilitySeconds,
        WaitTimeSeconds: waitSeconds,
      }),
    );
    return (Messages ?? []).flatMap((m) =>
      m.ReceiptHandle ? [{ message: parseRunMessage(m.Body), receiptHandle: m.ReceiptHandle }] : [],
    );
  }

  release(receiptHandle: string): Promise<void> {
    return this.extend(receiptHandle, 0);
  }

  async extend(receiptHandle: string, seconds: number): Promise<void> {
    await this.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  }

  async delete(receiptHandle: string): Promise<void> {
    await this.sqs.send(new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle }));
  }
}
