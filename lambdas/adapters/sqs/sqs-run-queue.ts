import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { z } from "zod";
import { dueOf } from "../../core/delivery";
import type {
  LaneRetirement,
  ReceivedRunMessage,
  ReceiveRequest,
  RunMessage,
  RunQueue,
} from "../../core/ports";
import { isPushType } from "../../core/target";
import type { Lane, LaneDirectory } from "./lane-directory";
import { messageGroupIdOf } from "./message-group";
import { isQueueGone } from "./queue-errors";

/** SQS takes at most 10 messages per batch call. */
const BATCH = 10;
/** The most lanes one receive polls; the rotation gives the others their turn next time. */
export const MAX_LANES_PER_RECEIVE = 10;

const runMessageSchema = z.object({
  runId: z.string(),
  jobId: z.string(),
  scheduledFor: z.number(),
  tenant: z.string(),
  type: z.string(),
  notBefore: z.number().optional(),
  backfill: z.literal(true).optional(),
  madeAt: z.number().optional(),
  final: z.literal(true).optional(),
  request: z.string().optional(),
});

export function parseRunMessage(body: string | undefined): RunMessage | undefined {
  try {
    const parsed = runMessageSchema.safeParse(JSON.parse(body ?? ""));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function countOf(received: ReadonlyArray<{ messages: readonly ReceivedRunMessage[] }>): number {
  return received.reduce((sum, r) => sum + r.messages.length, 0);
}

/** Our receipt handles say which lane the message came from: `<queue URL> <SQS handle>`. */
export function handleOf(queueUrl: string, receiptHandle: string): string {
  return `${queueUrl} ${receiptHandle}`;
}

function splitHandle(handle: string): { queueUrl: string; receiptHandle: string } {
  const space = handle.indexOf(" ");
  return { queueUrl: handle.slice(0, space), receiptHandle: handle.slice(space + 1) };
}

/**
 * RunQueue on SQS lanes (see LaneDirectory). A receive takes a fair share from each lane of the
 * requested types, the lanes in rotating order: a tenant with 5,000 ready runs gets no more of
 * a request than one with 50, and a backlog of type Y is never in the way of type X. Push runs
 * go to the one push queue with their tenant as MessageGroupId, which makes it an SQS fair
 * queue: the same guarantee between tenants, kept by SQS (decision 0039).
 */
export class SqsRunQueue implements RunQueue {
  private turn = Math.floor(Math.random() * 1_000);

  constructor(
    private readonly sqs: SQSClient,
    private readonly lanes: LaneDirectory,
    /** Where push runs (types `@https`, `@lambda`, `@sqs`) go: the dispatcher's queue, no lane. */
    private readonly pushQueueUrl: string,
    private readonly sleep: (ms: number) => Promise<void> = (ms) =>
      new Promise((done) => setTimeout(done, ms)),
  ) {}

  retireIdleLanes(idleBefore: number, now: number, budgetMs: number): Promise<LaneRetirement> {
    return this.lanes.retireIdle(idleBefore, now, budgetMs);
  }

  async laneBacklog(tenant: string, type: string): Promise<number> {
    const [lane] = isPushType(type)
      ? [{ url: this.pushQueueUrl }]
      : await this.lanes.lanesOf([type], [tenant]);
    if (!lane) return 0;
    const { Attributes } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: lane.url,
        AttributeNames: ["ApproximateNumberOfMessages"],
      }),
    );
    return Number(Attributes?.ApproximateNumberOfMessages ?? 0) || 0;
  }

  async send(messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>): Promise<void> {
    const byLane = new Map<string, Array<{ message: RunMessage; delaySeconds: number }>>();
    for (const entry of messages) {
      const key = `${entry.message.tenant}\n${entry.message.type}`;
      byLane.set(key, [...(byLane.get(key) ?? []), entry]);
    }
    await Promise.all(
      [...byLane.values()].map(async (entries) => {
        const first = entries[0];
        if (!first) return;
        const { tenant, type } = first.message;
        for (let start = 0; start < entries.length; start += BATCH) {
          const batch = entries.slice(start, start + BATCH);
          if (isPushType(type)) {
            // The tenant as the message group: the push queue is a fair queue (decision 0039).
            await this.sendBatch(this.pushQueueUrl, batch, messageGroupIdOf(tenant));
            continue;
          }
          const queueUrl = await this.lanes.laneFor(tenant, type);
          try {
            await this.sendBatch(queueUrl, batch);
          } catch (error) {
            if (!isQueueGone(error)) throw error;
            // The lane's queue is gone (a restarted local emulator): create it again, once.
            this.lanes.forget(queueUrl);
            await this.sendBatch(await this.lanes.laneFor(tenant, type), batch);
          }
        }
      }),
    );
  }

  private async sendBatch(
    queueUrl: string,
    batch: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>,
    messageGroupId?: string,
  ) {
    const result = await this.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: batch.map(({ message, delaySeconds }, i) => ({
          Id: String(i),
          MessageBody: JSON.stringify(message),
          DelaySeconds: delaySeconds,
          ...(messageGroupId === undefined ? {} : { MessageGroupId: messageGroupId }),
        })),
      }),
    );
    const failed = result.Failed ?? [];
    if (failed.length > 0) {
      const reasons = failed.map((f) => `${f.Code ?? "?"}: ${f.Message ?? ""}`).join("; ");
      throw new Error(`SQS refused ${failed.length} of ${batch.length} run messages (${reasons})`);
    }
  }

  /**
   * One pass over (up to MAX_LANES_PER_RECEIVE of) the worker's lanes, each for its fair share
   * of the request; lanes that filled their share are topped up with what the others left. Only when nothing at all was ready
   * does it long-poll, all those lanes at once (see longPoll).
   */
  async receive(request: ReceiveRequest): Promise<ReceivedRunMessage[]> {
    const { max, visibilitySeconds, waitSeconds } = request;
    const all = await this.lanes.lanesOf(request.types, request.tenants);
    if (all.length === 0) {
      if (waitSeconds > 0) await this.sleep(waitSeconds * 1000); // nothing to poll yet
      return [];
    }
    // The lane a worker's bell rang on comes first; otherwise the lanes take turns.
    const preferred = request.first === undefined ? -1 : all.findIndex((lane) => lane.key === request.first);
    const start = preferred >= 0 ? preferred : this.turn++ % all.length;
    const lanes = [...all.slice(start), ...all.slice(0, start)].slice(0, MAX_LANES_PER_RECEIVE);
    const base = Math.floor(max / lanes.length);
    const extra = max % lanes.length;
    const shares = lanes.map((lane, i) => ({ lane, share: base + (i < extra ? 1 : 0) }));

    let received = await this.pass(shares, visibilitySeconds, 0);
    let got = countOf(received);
    if (got === 0 && waitSeconds > 0) {
      received = await this.longPoll(shares, visibilitySeconds, waitSeconds);
      got = countOf(received);
    }
    // Lanes that gave all they were asked for may have more: taken only if what they gave is due.
    const dueSoon = (m: ReceivedRunMessage) =>
      m.message !== undefined && dueOf(m.message) < request.topUpDueBefore;
    const full = received.filter((r) => r.messages.length === r.share && r.messages.every(dueSoon));
    if (got < max && full.length > 0) {
      const room = max - got;
      const more = await this.pass(
        full.map((r, i) => ({
          lane: r.lane,
          share: Math.floor(room / full.length) + (i < room % full.length ? 1 : 0),
        })),
        visibilitySeconds,
        0,
      );
      received = [...received, ...more];
    }
    return received.flatMap((r) => r.messages);
  }

  /**
   * Waits up to `waitSeconds` for a message in any of the lanes. One lane is long-polled for
   * the whole wait. Several are long-polled together a second at a time: a pass answers only
   * when every lane's poll has, so one long poll per lane would keep a run that arrived in one
   * lane waiting for the empty others' full wait. (Abandoning those polls instead could lose
   * the messages SQS hands them to their visibility timeout: a run would start a lease late.)
   */
  private async longPoll(
    shares: ReadonlyArray<{ lane: Lane; share: number }>,
    visibilitySeconds: number,
    waitSeconds: number,
  ) {
    const polled = shares.filter((s) => s.share > 0);
    if (polled.length <= 1) return this.pass(shares, visibilitySeconds, waitSeconds);
    let received = await this.pass(shares, visibilitySeconds, 1);
    for (let waited = 1; waited < waitSeconds && countOf(received) === 0; waited++) {
      received = await this.pass(shares, visibilitySeconds, 1);
    }
    return received;
  }

  private pass(
    shares: ReadonlyArray<{ lane: Lane; share: number }>,
    visibilitySeconds: number,
    waitSeconds: number,
  ) {
    return Promise.all(
      shares.map(async ({ lane, share }) => {
        const messages =
          share > 0 ? await this.receiveFrom(lane.url, share, visibilitySeconds, waitSeconds) : [];
        return { lane, share, messages };
      }),
    );
  }

  /** Up to `max` from one lane: one poll, and when that comes back full, the rest in parallel. */
  private async receiveFrom(
    queueUrl: string,
    max: number,
    visibilitySeconds: number,
    waitSeconds: number,
  ): Promise<ReceivedRunMessage[]> {
    try {
      const first = await this.receiveBatch(queueUrl, Math.min(max, BATCH), visibilitySeconds, waitSeconds);
      if (first.length < BATCH || max <= BATCH) return first;
      const more = await Promise.all(
        Array.from({ length: Math.ceil((max - BATCH) / BATCH) }, (_, i) =>
          this.receiveBatch(queueUrl, Math.min(BATCH, max - BATCH * (i + 1)), visibilitySeconds, 0),
        ),
      );
      return [...first, ...more.flat()];
    } catch (error) {
      if (!isQueueGone(error)) throw error;
      this.lanes.forget(queueUrl);
      return [];
    }
  }

  private async receiveBatch(
    queueUrl: string,
    count: number,
    visibilitySeconds: number,
    waitSeconds: number,
  ): Promise<ReceivedRunMessage[]> {
    const { Messages } = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: count,
        VisibilityTimeout: visibilitySeconds,
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ["ApproximateReceiveCount"],
      }),
    );
    return (Messages ?? []).flatMap((m) =>
      m.ReceiptHandle
        ? [
            {
              message: parseRunMessage(m.Body),
              receiptHandle: handleOf(queueUrl, m.ReceiptHandle),
              receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1) || 1,
            },
          ]
        : [],
    );
  }

  release(receiptHandle: string): Promise<void> {
    return this.extend(receiptHandle, 0);
  }

  async extend(handle: string, seconds: number): Promise<void> {
    const { queueUrl, receiptHandle } = splitHandle(handle);
    await this.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  }

  async hide(changes: ReadonlyArray<{ receiptHandle: string; seconds: number }>): Promise<readonly string[]> {
    return inBatchesPerQueue(
      changes.map((change) => ({ handle: change.receiptHandle, seconds: change.seconds })),
      (queueUrl, batch) =>
        this.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: batch.map((entry, i) => ({
              Id: String(i),
              ReceiptHandle: entry.receiptHandle,
              VisibilityTimeout: entry.seconds,
            })),
          }),
        ),
    );
  }

  deleteBatch(handles: readonly string[]): Promise<readonly string[]> {
    return inBatchesPerQueue(
      handles.map((handle) => ({ handle })),
      (queueUrl, batch) =>
        this.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: batch.map((entry, i) => ({ Id: String(i), ReceiptHandle: entry.receiptHandle })),
          }),
        ),
    );
  }

  async delete(handle: string): Promise<void> {
    const { queueUrl, receiptHandle } = splitHandle(handle);
    await this.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: receiptHandle }));
  }
}

/**
 * Runs a batched SQS call for received messages: grouped by the queue their handle names, ten
 * to a call. Never rejects: returns the handles whose entries failed, or whose call did.
 */
async function inBatchesPerQueue<E extends { readonly handle: string }>(
  entries: readonly E[],
  send: (
    queueUrl: string,
    batch: ReadonlyArray<E & { readonly receiptHandle: string }>,
  ) => Promise<{ Failed?: Array<{ Id?: string | undefined }> | undefined }>,
): Promise<readonly string[]> {
  const byQueue = new Map<string, Array<E & { receiptHandle: string }>>();
  for (const entry of entries) {
    const { queueUrl, receiptHandle } = splitHandle(entry.handle);
    byQueue.set(queueUrl, [...(byQueue.get(queueUrl) ?? []), { ...entry, receiptHandle }]);
  }
  const failed = await Promise.all(
    [...byQueue].flatMap(([queueUrl, all]) =>
      Array.from({ length: Math.ceil(all.length / BATCH) }, async (_, b) => {
        const batch = all.slice(b * BATCH, b * BATCH + BATCH);
        try {
          const result = await send(queueUrl, batch);
          return (result.Failed ?? []).flatMap((f) => batch[Number(f.Id)]?.handle ?? []);
        } catch {
          return batch.map((entry) => entry.handle);
        }
      }),
    ),
  );
  return failed.flat();
}
