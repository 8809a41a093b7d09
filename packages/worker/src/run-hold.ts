/**
 * The worker side of the lease protocol's hold (decision 0014). A lease is handed over as soon
 * as it is granted, up to about half a minute before its run is due; the worker holds each run
 * until its `startAt` and only then runs it. Runs that are due wait for one of `concurrency`
 * slots, earliest start first. A run is never started before its `startAt`, and never once
 * its lease is nearly over: started then, it would run while the scheduler hands it to another
 * worker. Such a run is given up (it lapses and runs again elsewhere, with a higher fence).
 */
export interface HeldRun {
  readonly runKey: string;
  /** ISO instant: not to be started before. */
  readonly startAt: string;
  /** ISO instant: the lease's end. */
  readonly leaseExpiresAt: string;
}

/** The clock the hold runs on: the real one, or a test's fake. */
export interface HoldClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemHoldClock: HoldClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * A run is started only while more than this is left of its lease: less, and its first
 * heartbeat could not reach the scheduler before the lease lapses.
 */
export const START_MARGIN_MS = 1_000;

export interface RunHoldOptions<R extends HeldRun> {
  /** Runs executed at once. */
  readonly concurrency: number;
  /** Executes a run; the hold counts it until the promise settles. */
  readonly start: (run: R) => Promise<void>;
  /** Told of a run given up because its lease ran out while it waited for a slot. */
  readonly giveUp: (run: R) => void;
  readonly clock?: HoldClock;
}

export class RunHold<R extends HeldRun> {
  private readonly clock: HoldClock;
  /** Runs waiting for their startAt, by timer. */
  private readonly waiting = new Map<R, unknown>();
  /** Runs whose startAt has come, waiting for a slot: earliest start first. */
  private readonly ready: R[] = [];
  private running = 0;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(private readonly options: RunHoldOptions<R>) {
    this.clock = options.clock ?? systemHoldClock;
  }

  /** Takes a leased run into the hold. */
  add(run: R): void {
    this.arm(run);
  }

  /** Runs in hand: held, ready, or executing. */
  inHand(): number {
    return this.waiting.size + this.ready.length + this.running;
  }

  /** Runs held for a start later than `instant` (epoch ms): leased ahead of their time. */
  heldStartingAfter(instant: number): number {
    let count = 0;
    for (const run of this.waiting.keys()) if (Date.parse(run.startAt) > instant) count += 1;
    return count;
  }

  executing(): number {
    return this.running;
  }

  /** Resolves once nothing is in hand. */
  idle(): Promise<void> {
    if (this.inHand() === 0) return Promise.resolve();
    return new Promise((done) => this.idleWaiters.push(done));
  }

  private arm(run: R): void {
    const wait = Date.parse(run.startAt) - this.clock.now();
    if (wait <= 0) {
      this.waiting.delete(run);
      this.insertReady(run);
      this.pump();
      return;
    }
    // A timer may fire a millisecond early by the wall clock: re-armed until the instant is here.
    this.waiting.set(
      run,
      this.clock.setTimeout(() => this.arm(run), wait),
    );
  }

  private insertReady(run: R): void {
    const at = Date.parse(run.startAt);
    const index = this.ready.findIndex((other) => Date.parse(other.startAt) > at);
    if (index < 0) this.ready.push(run);
    else this.ready.splice(index, 0, run);
  }

  private pump(): void {
    while (this.running < this.options.concurrency && this.ready.length > 0) {
      const run = this.ready.shift() as R;
      if (Date.parse(run.leaseExpiresAt) - this.clock.now() <= START_MARGIN_MS) {
        this.options.giveUp(run);
        continue;
      }
      this.running += 1;
      this.options
        .start(run)
        .catch(() => undefined)
        .finally(() => {
          this.running -= 1;
          this.pump();
          this.settleIdle();
        });
    }
    this.settleIdle();
  }

  private settleIdle(): void {
    if (this.inHand() > 0) return;
    for (const done of this.idleWaiters.splice(0)) done();
  }

  /** Drops every run not yet started (the worker is stopping hard); returns them. */
  dropUnstarted(): R[] {
    for (const handle of this.waiting.values()) this.clock.clearTimeout(handle);
    const dropped = [...this.waiting.keys(), ...this.ready];
    this.waiting.clear();
    this.ready.length = 0;
    this.settleIdle();
    return dropped;
  }
}
