import { OverlapPolicy } from "@jobsched/contract";
import { formatInstant } from "../instant";
import { type Run, RunStatus } from "../run";
import { isLeasableAt, isUnfinished } from "./transition";

const isWaitingRetry = (run: Run) => run.status === RunStatus.Pending && run.attempt >= 1;

const hasLiveLease = (run: Run, now: number) =>
  run.status === RunStatus.Leased && (run.leaseExpiresAt ?? 0) > now;

/**
 * A run whose next lease only ends it: its leases lapsed as often as the job allows (it is
 * dead-lettered), or its at-most-once job never leases a run twice (it is recorded lost, or its
 * retry dead-lettered).
 */
export function neverStartsAgain(
  run: Pick<Run, "attempt">,
  job: { readonly maxAttempts: number; readonly atMostOnce: boolean },
): boolean {
  return run.attempt >= job.maxAttempts || (job.atMostOnce && run.attempt >= 1);
}

/**
 * What the lease step does with a run of a job that has an overlap policy (decision 0025), as
 * a pure decision over what it read: the message's own run, the run the job last started (the
 * job's `activeRunAt`) and, under buffer-one, the run that waits for it. The lease step
 * applies the answer (overlap.ts).
 *
 * Two rules keep a message from ending a run it does not name (issue 27, finding 1): a message
 * whose own run cannot be leased now (finished, revoked, held by a live lease, or waiting for a
 * later retry) is dropped before any policy is looked at; and a run older than the one that
 * last started never skips, revokes or buffers against it: it waits for it to finish.
 */
export type OverlapDecision =
  | { readonly kind: "lease" }
  | { readonly kind: "drop"; readonly reason: string }
  | { readonly kind: "wait"; readonly until: number }
  | { readonly kind: "skip"; readonly reason: string }
  /** Note the run on the active one (replacing a finished waiter's place), then wait. */
  | { readonly kind: "buffer"; readonly replacing: number | undefined; readonly until: number }
  /** Revoke the active run (its fence raised), then lease this one. */
  | { readonly kind: "revoke"; readonly reason: string }
  /** Dead-letter the active run's waiting retry, which its at-most-once job will never run, then lease. */
  | { readonly kind: "drop-active-retry" }
  /**
   * Lease it without a claim on the job: it will never start again (neverStartsAgain), so the
   * lease step only ends it: dead-lettered (exhaustedByLapses), or under at-most-once recorded
   * lost or its retry dead-lettered. It displaces nothing.
   */
  | { readonly kind: "end-own" };

export interface OverlapInput {
  readonly policy: OverlapPolicy;
  readonly backfill: boolean;
  /** The job's delivery is at-most-once (a retry that waits will never run). */
  readonly atMostOnce: boolean;
  /** The job's maxAttempts: a run that used them all by lapsed leases will not start again. */
  readonly maxAttempts: number;
  /** The run the message names; undefined when it does not exist. */
  readonly own: Run | undefined;
  /** When the lease would start the run. */
  readonly startsAt: number;
  /** The job's active run (activeRunAt), as read; undefined when none is recorded or it is gone. */
  readonly active: Run | undefined;
  /** buffer-one: the run the active one wakes when it finishes, when it is not `own`. */
  readonly waiting: Run | undefined;
  readonly now: number;
}

/** A run leased at least once: it may have started, so it is never recorded as skipped. */
function hasStarted(run: Pick<Run, "fence">): boolean {
  return run.fence > 0;
}

export function decideOverlap(input: OverlapInput): OverlapDecision {
  const { policy, own, active, now } = input;
  if (policy === OverlapPolicy.Allow || input.backfill) return { kind: "lease" };
  if (!own || !isLeasableAt(own, input.startsAt))
    return { kind: "drop", reason: "its run is finished, held by a live lease, or waits for a later retry" };
  // A run that will never start again is not about to start: it must not revoke, skip or wait
  // for another, only be ended (the model found a lapsed run's message revoking a running
  // replay, then dead-lettering itself; a review found the at-most-once form below).
  if (neverStartsAgain(own, input)) return { kind: "end-own" };
  if (!active || active.scheduledFor === own.scheduledFor || !isUnfinished(active)) return { kind: "lease" };
  // A retry that waits when its job became at-most-once will never run (finding 2): it holds
  // no place against a newer run. Its own message would dead-letter it, but only at its retry
  // time (up to the backoff cap), and every firing meanwhile would be skipped against it.
  if (input.atMostOnce && isWaitingRetry(active) && !active.final && own.scheduledFor > active.scheduledFor)
    return { kind: "drop-active-retry" };
  // An active run that will never start again and is not running (its lease lapsed, or it waits)
  // is over but for its record: its own message only ends it. It holds no place, or a run would
  // be skipped or kept waiting behind a run that is already dead, depending only on which of the
  // messages came first (the model found a replay skipped so).
  if (neverStartsAgain(active, input) && !hasLiveLease(active, now)) {
    // Under buffer-one, the run it wakes still goes first: an older run waits for it, a newer
    // one finds the buffer taken.
    const waiter = input.waiting;
    const queued =
      policy === OverlapPolicy.BufferOne &&
      waiter !== undefined &&
      active.wakes === waiter.scheduledFor &&
      waiter.scheduledFor !== own.scheduledFor &&
      isUnfinished(waiter) &&
      !neverStartsAgain(waiter, input);
    if (!queued) return { kind: "lease" };
    if (own.scheduledFor < waiter.scheduledFor || own.final || hasStarted(own))
      return { kind: "wait", until: now };
    return {
      kind: "skip",
      reason: `the run of ${formatInstant(waiter.scheduledFor)} waits to start first (overlapPolicy buffer-one)`,
    };
  }
  const until = active.leaseExpiresAt ?? active.retryAt ?? now;
  // An older run (a replay) never ends or displaces the newer one: it runs after it.
  if (own.scheduledFor < active.scheduledFor) return { kind: "wait", until };
  const running = formatInstant(active.scheduledFor);
  // A job's last run is what ends it: it waits rather than be skipped. So does a run that was
  // leased before (its lease lapsed, or it waits for a retry): it may have run, and a skipped
  // run is one that never started (the crash loop found one skipped after a PATCH made its job
  // skip while it ran, and an older run's lapsed lease was taken again first).
  const skip = (reason: string): OverlapDecision =>
    own.final || hasStarted(own) ? { kind: "wait", until } : { kind: "skip", reason };
  switch (policy) {
    case OverlapPolicy.Skip:
      return skip(`the run of ${running} was still unfinished (overlapPolicy skip)`);
    case OverlapPolicy.BufferOne: {
      if (active.wakes === own.scheduledFor) return { kind: "wait", until };
      if (active.wakes === undefined) return { kind: "buffer", replacing: undefined, until };
      // A waiter that ended meanwhile (missed, cancelled, or gone), or that will only be ended
      // (a PATCH made its job at-most-once or lowered maxAttempts), holds the place no longer.
      if (!input.waiting || !isUnfinished(input.waiting) || neverStartsAgain(input.waiting, input))
        return { kind: "buffer", replacing: active.wakes, until };
      return skip(
        `the run of ${running} was still unfinished and another run waits for it (overlapPolicy buffer-one)`,
      );
    }
    case OverlapPolicy.CancelPrevious:
      if (active.final) return { kind: "wait", until };
      return {
        kind: "revoke",
        reason: `cancelled: the run of ${formatInstant(own.scheduledFor)} replaced it (overlapPolicy cancel-previous)`,
      };
  }
}
