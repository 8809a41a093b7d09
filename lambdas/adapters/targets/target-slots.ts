import type { TargetSlots } from "../../core/target";

/**
 * Deliveries in flight per target key, against each target's `concurrency` (decision 0029): a
 * delivery takes a slot when it starts and gives it back when it ends; one that finds the
 * target full waits its turn (first come, first served), at most `waitMs`. One per process: a
 * dispatcher instance in AWS, the whole local runtime locally.
 */
export class InProcessTargetSlots implements TargetSlots {
  private readonly taken = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  /** Deliveries waiting for a slot: while there are some, outcomes wait (quiet). */
  private queued = 0;
  private readonly onQuiet = new Set<() => void>();

  inFlight(key: string): number {
    return this.taken.get(key) ?? 0;
  }

  queuedFor(key: string): number {
    return this.waiting.get(key)?.length ?? 0;
  }

  /** True once a slot is held; false if none came free within `waitMs`. */
  async acquire(key: string, limit: number, waitMs: number): Promise<boolean> {
    if (this.inFlight(key) < limit) {
      this.taken.set(key, this.inFlight(key) + 1);
      return true;
    }
    if (waitMs <= 0) return false;
    this.queued++;
    return new Promise<boolean>((resolve) => {
      const queue = this.waiting.get(key) ?? [];
      const turn = () => {
        clearTimeout(timer);
        this.taken.set(key, this.inFlight(key) + 1);
        this.dequeued();
        resolve(true);
      };
      const timer = setTimeout(() => {
        const left = (this.waiting.get(key) ?? []).filter((t) => t !== turn);
        if (left.length > 0) this.waiting.set(key, left);
        else this.waiting.delete(key);
        this.dequeued();
        resolve(false);
      }, waitMs);
      queue.push(turn);
      this.waiting.set(key, queue);
    });
  }

  release(key: string): void {
    const count = this.inFlight(key) - 1;
    if (count <= 0) this.taken.delete(key);
    else this.taken.set(key, count);
    const queue = this.waiting.get(key);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(key);
    next?.();
  }

  quiet(maxWaitMs: number): Promise<void> {
    if (this.queued === 0 || maxWaitMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.onQuiet.delete(done);
        resolve();
      };
      const timer = setTimeout(done, maxWaitMs);
      this.onQuiet.add(done);
    });
  }

  /** One waiting delivery less; when none is left, the outcomes waiting for quiet go on. */
  private dequeued(): void {
    this.queued = Math.max(0, this.queued - 1);
    if (this.queued === 0) for (const done of [...this.onQuiet]) done();
  }
}
