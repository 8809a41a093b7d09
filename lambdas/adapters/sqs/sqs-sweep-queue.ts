import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { z } from "zod";
import type { SweepMessage, SweepQueue } from "../../core/ports";

/** One message per shard group, in batches of ten. */
export class SqsSweepQueue implements SweepQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async dispatch(messages: readonly SweepMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += 10) {
      const batch = messages.slice(start, start + 10);
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((message) => ({
            Id: String(message.group),
            MessageBody: JSON.stringify(message),
          })),
        }),
      );
      if ((result.Failed ?? []).length > 0) {
        throw new Error(`SQS refused ${result.Failed?.length} sweep messages`);
      }
    }
  }
}

const sweepMessage = z.object({
  group: z.int().min(0),
  tickAt: z.number(),
  // Absent in a message from a tick before decision 0059.
  ahead: z
    .object({ from: z.number(), to: z.number() })
    .refine((slice) => slice.to >= slice.from, "a slice ends at or after its start")
    .optional(),
});

/** Reads a sweep message; undefined when it is not one. */
export function parseSweepMessage(body: string): SweepMessage | undefined {
  try {
    const parsed = sweepMessage.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
