import { PUSH_QUEUE, RUN_QUEUE } from "../../definitions/queues";
import { MAX_DELAY_SECONDS } from "../aws-limits";
import type { SchedulerDeps } from "../deps";
import type { ReceivedRunMessage, RunMessage } from "../ports";

/** A received message whose body could be read. */
export type Readable = ReceivedRunMessage & { readonly message: RunMessage };

/**
 * A queue moves a message to its dead-letter queue once SQS has handed it out maxReceiveCount
 * times (a lane's 1,000, the push queue's 50), and every receive counts: a run held back a
 * second at a time behind its tenant's rate limit, or sent back from a full response, is
 * received again and again without ever running, and idle workers' peeks count too (decision
 * 0049). So a message received this often is sent back as a fresh copy (its count starts
 * again) and the old one deleted, instead of hidden: half the push queue's limit, and far under
 * a lane's, whatever the number of listeners on it.
 */
export const RECYCLE_AFTER_RECEIVES = Math.floor(
  Math.min(RUN_QUEUE.deadLetter.maxReceiveCount, PUSH_QUEUE.deadLetter.maxReceiveCount) / 2,
);

export interface SentBack {
  readonly received: Readable;
  /** When it should be visible again, in seconds from now. */
  readonly seconds: number;
}

/**
 * Sends received messages back to their lane, visible again in `seconds`: hidden, or, when
 * received RECYCLE_AFTER_RECEIVES times already, re-sent fresh (a delay of at most 15
 * minutes: a later run is hidden again when the copy shows up) and the old copy deleted. A
 * copy sent but not deleted only means a duplicate message, which the lease step drops.
 */
export async function sendBack(deps: SchedulerDeps, entries: readonly SentBack[]): Promise<void> {
  const isWorn = (e: SentBack) => (e.received.receiveCount ?? 0) >= RECYCLE_AFTER_RECEIVES;
  const worn = entries.filter(isWorn);
  const rest = entries.filter((e) => !isWorn(e));
  const hiding = deps.queue.hide(
    rest.map((e) => ({ receiptHandle: e.received.receiptHandle, seconds: e.seconds })),
  );
  if (worn.length > 0) {
    try {
      await deps.queue.send(
        worn.map((e) => ({
          message: e.received.message,
          delaySeconds: Math.min(MAX_DELAY_SECONDS, e.seconds),
        })),
      );
      await deps.queue.deleteBatch(worn.map((e) => e.received.receiptHandle));
    } catch (error) {
      deps.log.warn("could not recycle worn run messages; hiding them instead", { error: String(error) });
      await deps.queue.hide(
        worn.map((e) => ({ receiptHandle: e.received.receiptHandle, seconds: e.seconds })),
      );
    }
  }
  await hiding;
}
