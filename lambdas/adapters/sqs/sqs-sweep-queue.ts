import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { z } from "zod";
import type { SweepQueue } from "../../core/ports";

/** One message per shard group, in batches of ten. */
export class SqsSweepQueue implements SweepQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async dispatch(groups: readonly number[], tickAt: number): Promise<void> {
    for (let start = 0; start < groups.length; start += 10) {
      const batch = groups.slice(start, start + 10);
      const result = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((group) => ({
            Id: String(group),
            MessageBody: JSON.stringify({ group, tickAt }),
          })),
        }),
      );
      if ((result.Failed ?? []).length > 0) {
        throw new Error(`SQS refused ${result.Failed?.length} sweep messages`);
      }
    }
  }
}

const sweepMessage = z.object({ group: z.int().min(0), tickAt: z.number() });

/** Reads a sweep message; undefined when it is not one. */
export function parseSweepMessage(body: string): { group: number; tickAt: number } | undefined {
  try {
    const parsed = sweepMessage.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
