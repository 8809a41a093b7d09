import type { Clock } from "../../lambdas/core/clock";
import { seedOf } from "../../lambdas/core/delivery";
import type {
  LaneRetirement,
  ReceivedRunMessage,
  ReceiveRequest,
  RunMessage,
  RunQueue,
} from "../../lambdas/core/ports";
import type { RunSeed } from "../../lambdas/core/run";

/**
 * A run queue that keeps time as SQS does, on the model's fake clock: a message sent with a
 * delay is invisible until then; a received one is hidden for the visibility asked and gets a
 * fresh receipt handle; only the latest handle deletes or hides it (SQS: an older handle's
 * delete "succeeds" but may leave the message). The model may also duplicate a message (SQS
 * standard queues deliver at least once), which is what makes stale and repeated messages.
 */
export interface SimMessage {
  readonly id: number;
  readonly message: RunMessage;
  visibleAt: number;
  receiptHandle: string | undefined;
  receiveCount: number;
}

export class SimRunQueue implements RunQueue {
  readonly messages: SimMessage[] = [];
  /**
   * Every run made but not written (decision 0051) a message was ever sent for, by job id and
   * instant: the checks' view of runs counts them pending until one is written, so a run whose
   * every copy went without writing it stays unfinished, and the drain finds it.
   */
  readonly made = new Map<string, RunSeed>();
  /**
   * The request tags (decision 0052) the made runs' messages carried, by job id and instant
   * (undefined: made by a sweep or a keyless create): a keyed create retried with another body
   * makes a run of the same job id that is not the job's.
   */
  readonly madeBy = new Map<string, Set<string | undefined>>();
  private nextId = 1;
  private nextHandle = 1;

  constructor(private readonly clock: Clock) {}

  async send(messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>): Promise<void> {
    for (const { message, delaySeconds } of messages) this.put(message, delaySeconds * 1000);
  }

  /** A copy of a stored message, visible after `delayMs`: SQS's at-least-once delivery. */
  duplicate(index: number, delayMs: number): void {
    const original = this.messages[index % Math.max(1, this.messages.length)];
    if (original) this.put(original.message, delayMs);
  }

  private put(message: RunMessage, delayMs: number): void {
    const seed = seedOf(message, this.clock.now(), 0);
    const key = `${message.jobId}@${message.scheduledFor}`;
    if (seed && !this.made.has(key)) this.made.set(key, seed);
    if (seed) this.madeBy.set(key, (this.madeBy.get(key) ?? new Set()).add(message.request));
    this.messages.push({
      id: this.nextId++,
      message: structuredClone(message),
      visibleAt: this.clock.now() + delayMs,
      receiptHandle: undefined,
      receiveCount: 0,
    });
  }

  async receive({ types, tenants, max, visibilitySeconds }: ReceiveRequest): Promise<ReceivedRunMessage[]> {
    const now = this.clock.now();
    const ready = this.messages
      .filter(
        (m) => m.visibleAt <= now && types.includes(m.message.type) && tenants.includes(m.message.tenant),
      )
      .sort((a, b) => a.visibleAt - b.visibleAt || a.id - b.id)
      .slice(0, max);
    return ready.map((m) => {
      m.receiptHandle = `rh-${this.nextHandle++}`;
      m.receiveCount += 1;
      m.visibleAt = now + visibilitySeconds * 1000;
      return { message: m.message, receiptHandle: m.receiptHandle, receiveCount: m.receiveCount };
    });
  }

  private byHandle(receiptHandle: string): SimMessage | undefined {
    return this.messages.find((m) => m.receiptHandle === receiptHandle);
  }

  async release(receiptHandle: string): Promise<void> {
    const m = this.byHandle(receiptHandle);
    if (m) m.visibleAt = this.clock.now();
  }

  async hide(changes: ReadonlyArray<{ receiptHandle: string; seconds: number }>): Promise<readonly string[]> {
    const failed: string[] = [];
    for (const { receiptHandle, seconds } of changes) {
      const m = this.byHandle(receiptHandle);
      if (m) m.visibleAt = this.clock.now() + seconds * 1000;
      else failed.push(receiptHandle);
    }
    return failed;
  }

  async delete(receiptHandle: string): Promise<void> {
    const index = this.messages.findIndex((m) => m.receiptHandle === receiptHandle);
    if (index >= 0) this.messages.splice(index, 1);
  }

  async deleteBatch(receiptHandles: readonly string[]): Promise<readonly string[]> {
    for (const handle of receiptHandles) await this.delete(handle);
    return [];
  }

  async laneBacklog(tenant: string, type: string): Promise<number> {
    const now = this.clock.now();
    return this.messages.filter(
      (m) => m.visibleAt <= now && m.message.tenant === tenant && m.message.type === type,
    ).length;
  }

  async retireIdleLanes(): Promise<LaneRetirement> {
    return { examined: 0, retired: [], kept: 0, errors: [], finished: true };
  }

  /** Whether a receive for this type would find something now. */
  hasVisible(type: string): boolean {
    const now = this.clock.now();
    return this.messages.some((m) => m.visibleAt <= now && m.message.type === type);
  }

  /** Whether some message (visible, delayed or in flight) names this run. */
  carries(jobId: string, scheduledFor: number): boolean {
    return this.messages.some((m) => m.message.jobId === jobId && m.message.scheduledFor === scheduledFor);
  }
}
