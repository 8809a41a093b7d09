/**
 * The dispatcher's time (issue 27, finding 4; decision 0034). An invocation has until its
 * deadline (the function's remaining time, an instant the handler hands in: the core reads no
 * clock of its own) to hold each run until its second, wait for a place at its target, deliver
 * it and write its outcome. A run it cannot be sure to finish by then is not leased at all: it
 * goes back to the queue for a second, its fence and attempts untouched, for an invocation
 * with time ahead of it. Waiting for a place was bounded by the run's lease before (up to
 * 42,600 s, where the function has 60 s).
 */

/** Kept after a delivery's end for its outcome to be written (the run, a retry's message, the job's end). */
export const COMPLETION_MARGIN_MS = 2_000;

/**
 * The latest instant by which `count` deliveries to one target have all ended, each taking at
 * most `timeoutMs`, `concurrency` of them at a time, all of them there to start by `arrivedBy`:
 * `arrivedBy + (floor((count - 1) / concurrency) + 1) * timeoutMs`, whatever order they take
 * the places in. Why: while the last one to start waits past `arrivedBy`, every place is busy
 * (a freed place goes to a waiting delivery at once), and busy time on one place is a sequence
 * of the others' deliveries, each at most `timeoutMs`: keeping `concurrency` places busy for k
 * whole timeouts takes `k * concurrency` of the `count - 1` others.
 */
export function worstEndOf(count: number, concurrency: number, timeoutMs: number, arrivedBy: number): number {
  if (count <= 0) return arrivedBy;
  return arrivedBy + (Math.floor((count - 1) / Math.max(1, concurrency)) + 1) * timeoutMs;
}

/** One target's deliveries as an invocation plans them. */
interface TargetPlan {
  /** Deliveries counted: those in flight or waiting for a place when planning began, and the runs admitted. */
  readonly count: number;
  /** When the last of them is due (the ones in flight or waiting are there now). */
  readonly arrivedBy: number;
}

/**
 * Which runs of one batch the dispatcher can deliver and record by its deadline, per target:
 * a run is admitted only if all the target's deliveries planned so far (this process's in
 * flight and waiting ones, and this batch's admitted runs) would still end, in the worst case,
 * in time for their outcomes. In AWS one instance runs one invocation at a time, so the plan
 * covers every delivery it will make; a process that runs several invocations at once (the
 * local runtime) may see another invocation's runs take places first, which the dispatcher
 * meets by giving such a run back when its place does not come in time.
 */
export class DeliveryBudget {
  private readonly targets = new Map<string, TargetPlan>();

  constructor(
    private readonly now: number,
    private readonly deadline: number,
    /** Deliveries to the target in flight or waiting for a place in this process now. */
    private readonly busy: (key: string) => number,
  ) {}

  /** Whether a run to this target, due at `dueAt`, fits; if it does, it is counted in. */
  admits(key: string, concurrency: number, timeoutMs: number, dueAt: number): boolean {
    const planned = this.targets.get(key) ?? { count: this.busy(key), arrivedBy: this.now };
    const next = { count: planned.count + 1, arrivedBy: Math.max(planned.arrivedBy, dueAt) };
    if (
      worstEndOf(next.count, concurrency, timeoutMs, next.arrivedBy) >
      this.deadline - COMPLETION_MARGIN_MS
    ) {
      return false;
    }
    this.targets.set(key, next);
    return true;
  }
}
