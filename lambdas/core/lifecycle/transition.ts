import type { LeaseGrant, RetryPlan, RunOutcome } from "../ports";
import { availableAt, type Run, type RunSeed, RunStatus } from "../run";
import { seededRun } from "./creation";

/**
 * A run's life, as one pure function (decision 0037; docs/run-lifecycle.md has the diagram).
 * Every write to a stored run is one of these events, applied as one conditional write: the
 * event's guard is the write's condition, so a stale or repeated message, a lapsed worker or a
 * second sweeper finds the guard false and changes nothing. The in-memory store applies
 * `transition` itself; the DynamoDB store writes each event's guard as its ConditionExpression
 * and its changes as its UpdateExpression, and the store conformance test checks the two agree
 * on every event for generated runs.
 *
 *   pending --lease--> leased --finish--> succeeded | dead-lettered
 *   leased --retry--> pending (a later retryAt)           leased --lose--> lost (at-most-once)
 *   leased --return-lease--> pending (attempt not counted: the dispatcher could not deliver in time)
 *   pending | lapsed --abandon--> cancelled | missed | skipped
 *   pending | leased --revoke--> cancelled (cancel-previous; fence raised)
 *   pending (never started) --miss--> missed (maxLateness)
 *   pending (a retry) --drop-retry--> dead-lettered (its job became at-most-once)
 *   dead-lettered | missed --replay--> pending (attempt 0; a resume's re-run keeps its attempts)
 *   finished last run, untracked --track--> the same, in the repair index (its job not yet ended)
 *   any run not cancelled --mark-last--> the same, its job's last (a copy of its message says so)
 */
export type RunEvent =
  | { readonly kind: "lease"; readonly grant: LeaseGrant }
  | {
      readonly kind: "heartbeat";
      readonly fence: number;
      readonly leaseExpiresAt: number;
      readonly now: number;
    }
  | {
      readonly kind: "finish";
      readonly fence: number;
      readonly outcome: RunOutcome;
      readonly tenants?: readonly string[] | undefined;
    }
  | { readonly kind: "retry"; readonly fence: number; readonly plan: RetryPlan }
  /** The dispatcher gives back a lease it cannot deliver in time: its attempt is not counted. */
  | { readonly kind: "return-lease"; readonly fence: number; readonly now: number }
  | {
      readonly kind: "replay";
      readonly from: "dead-lettered" | "missed";
      readonly by: string;
      readonly now: number;
      readonly checkAt: number;
      /** A resume's re-run: the attempts (leases) the run had count still. */
      readonly keepsAttempts?: boolean | undefined;
    }
  | {
      readonly kind: "abandon";
      readonly status: "cancelled" | "missed" | "skipped";
      readonly reason: string;
      readonly now: number;
      readonly final: boolean;
      readonly seed?: RunSeed | undefined;
    }
  | { readonly kind: "lose"; readonly reason: string; readonly now: number; readonly final: boolean }
  | { readonly kind: "revoke"; readonly reason: string; readonly now: number }
  | {
      readonly kind: "miss";
      readonly reason: string;
      readonly now: number;
      readonly final: boolean;
      readonly seed?: RunSeed | undefined;
    }
  | { readonly kind: "drop-retry"; readonly reason: string; readonly now: number; readonly final: boolean }
  | { readonly kind: "wake"; readonly waiting: number; readonly replacing?: number | undefined }
  | { readonly kind: "settle" }
  /** A finished last run whose job could not be ended yet enters the repair index (decision 0045). */
  | { readonly kind: "track"; readonly checkAt: number }
  /**
   * A copy of the run's message marks it its job's last where the stored run is not: a schedule
   * change met runs a creator made and died before recording (decision 0046's addendum), and
   * the two schedules' runs at one instant are one run, written first from the old one's copy.
   */
  | { readonly kind: "mark-last" }
  | { readonly kind: "recheck"; readonly expectedCheckAt: number; readonly checkAt: number };

/** A stored run: the run and the receipt handle of the message that delivered its lease. */
export type RunRecord = Run & { readonly receiptHandle?: string | undefined };

export function isUnfinished(run: Pick<Run, "status">): boolean {
  return run.status === RunStatus.Pending || run.status === RunStatus.Leased;
}

/**
 * When a run may next be leased: a pending run from its scheduled instant (or its retry's), a
 * leased one when its lease ends; never, once finished. The DynamoDB store keeps this instant
 * on the row (`availableAt`) and leases with one comparison against it.
 */
export function leasableFrom(run: Run): number | undefined {
  if (run.status === RunStatus.Pending) return availableAt(run);
  if (run.status === RunStatus.Leased) return run.leaseExpiresAt ?? 0;
  return undefined;
}

/** Whether a lease that starts the run at `startsAt` may be granted. */
export function isLeasableAt(run: Run, startsAt: number): boolean {
  const from = leasableFrom(run);
  return from !== undefined && from <= startsAt;
}

/** Whether a run may be ended without running: not started, or its lease lapsed by `now`. */
export function isUnstartedOrLapsed(run: Run, now: number): boolean {
  return (
    run.status === RunStatus.Pending || (run.status === RunStatus.Leased && (run.leaseExpiresAt ?? 0) <= now)
  );
}

/**
 * Whether `run` is what `event` itself left: a write carried out whose answer was lost, met by
 * the SDK's retry of the same request (decision 0053). Only events whose effect names them:
 * - a lease, by the receipt handle it wrote (a handle is one receive's alone);
 * - a retry, by its fence and the instants it set (its retry instant is jittered to the ms);
 * - a give-back, by its fence on a pending run no one leased since (a lease raises the fence).
 *   Its holder's own give-back is not the only way there: a resume's re-run of a lapsed lease
 *   recorded missed in a pause keeps the fence too. A stalled holder's give-back then answers
 *   as applied and shows the message of a pending, due run again: harmless.
 * - a finish, by the outcome it recorded under its fence: its status, its instant (finishedAt)
 *   and its error. Refused, the lease step's dead letter of a run whose leases lapsed too often
 *   left its job active for ever (the model found it, losing that write's answer); a worker's
 *   completion was answered from the run as it stands (complete-run.ts, repeatedOrStale).
 */
export function isRepeatOf(run: RunRecord, event: RunEvent): boolean {
  switch (event.kind) {
    case "lease":
      return run.status === RunStatus.Leased && run.receiptHandle === event.grant.receiptHandle;
    case "finish":
      return (
        !isUnfinished(run) &&
        run.status === event.outcome.status &&
        run.fence === event.fence &&
        run.finishedAt === event.outcome.now &&
        run.error === event.outcome.error &&
        run.final === event.outcome.final &&
        // A worker's completion names its tenants: another tenant's run is never answered.
        (event.tenants === undefined || event.tenants.includes(run.tenant))
      );
    case "retry":
      return (
        run.status === RunStatus.Pending &&
        run.fence === event.fence &&
        run.retryAt === event.plan.retryAt &&
        run.checkAt === event.plan.checkAt
      );
    case "return-lease":
      return run.status === RunStatus.Pending && run.fence === event.fence;
    default:
      return false;
  }
}

const held = (run: RunRecord, fence: number) => run.status === RunStatus.Leased && run.fence === fence;

/**
 * A run that finishes leaves the repair index, except a job's last run that is in it (a replay,
 * a retry, a missed record), which stays until its job is marked (end-job.ts): a crash between
 * the two writes leaves it there for the repair pass. A last run carried by its message is not
 * in it: that message, deleted only once the job is marked, re-drives the end (decision 0045).
 */
function finished(run: RunRecord, status: RunStatus, error: string | undefined, now: number): RunRecord {
  return {
    ...run,
    status,
    error,
    finishedAt: now,
    checkAt: run.final ? run.checkAt : undefined,
    receiptHandle: undefined,
    retryAt: undefined,
  };
}

/**
 * The run an event applies to: the stored one; with none stored, for a run made but not written
 * (decision 0051), the pending run its seed stands for. Only the events that can be a run's
 * first write carry a seed: its lease, and its end unstarted (abandon, miss). Every other event
 * needs a run that was leased, so it finds nothing to apply to, as its guard would refuse a
 * pending run never leased.
 */
export function runBefore(run: RunRecord | undefined, event: RunEvent): RunRecord | undefined {
  if (run) return run;
  const seed =
    event.kind === "lease"
      ? event.grant.seed
      : event.kind === "abandon" || event.kind === "miss"
        ? event.seed
        : undefined;
  return seed ? seededRun(seed) : undefined;
}

/** The run after `event`, or undefined when the event's guard refuses it (nothing is written). */
export function transition(stored: RunRecord | undefined, event: RunEvent): RunRecord | undefined {
  const run = runBefore(stored, event);
  if (!run) return undefined;
  // Refused, but this very request's effect, met by its own retry (its first answer was lost):
  // answered as applied, the run unchanged. Refused, a lease would wait out its own lease
  // (decision 0053). As the DynamoDB store, which looks only at what refused its write.
  return guarded(run, event) ?? (isRepeatOf(run, event) ? run : undefined);
}

/** The run after `event` when its guard admits it; undefined when it refuses it. */
function guarded(run: RunRecord, event: RunEvent): RunRecord | undefined {
  switch (event.kind) {
    case "lease": {
      const { grant } = event;
      if (!isLeasableAt(run, grant.startsAt)) return undefined;
      // At-most-once: a run leased before is never leased again (a replay resets attempt to 0).
      if (grant.firstOnly && run.attempt !== 0) return undefined;
      return {
        ...run,
        status: RunStatus.Leased,
        fence: run.fence + 1,
        attempt: run.attempt + 1,
        startedAt: grant.startsAt,
        leaseExpiresAt: grant.leaseExpiresAt,
        workerId: grant.workerId,
        receiptHandle: grant.receiptHandle,
        // A copy that marks it its job's last makes it so (see mark-last); a seed counts from
        // its run's instant, as for a run not written (the DynamoDB store's seeded write).
        final: run.final || (grant.seed?.final === true && grant.seed.scheduledFor <= grant.startsAt),
      };
    }
    case "heartbeat":
      if (!held(run, event.fence) || (run.leaseExpiresAt ?? 0) <= event.now) return undefined;
      return { ...run, leaseExpiresAt: event.leaseExpiresAt };
    case "finish": {
      const { outcome, tenants } = event;
      if (!held(run, event.fence) || run.final !== outcome.final) return undefined;
      if (tenants !== undefined && !tenants.includes(run.tenant)) return undefined;
      return finished(run, outcome.status, outcome.error, outcome.now);
    }
    case "retry":
      if (!held(run, event.fence)) return undefined;
      return {
        ...run,
        status: RunStatus.Pending,
        retryAt: event.plan.retryAt,
        checkAt: event.plan.checkAt,
        error: event.plan.error,
        ...(event.plan.failedAttempts === undefined ? {} : { failedAttempts: event.plan.failedAttempts }),
        leaseExpiresAt: undefined,
        receiptHandle: undefined,
      };
    case "return-lease":
      // Leasable at once (it was leased, so it was due); the fence stays raised.
      if (!held(run, event.fence)) return undefined;
      return {
        ...run,
        status: RunStatus.Pending,
        attempt: run.attempt - 1,
        leaseExpiresAt: undefined,
        receiptHandle: undefined,
      };
    case "replay":
      if (run.status !== event.from) return undefined;
      return {
        ...run,
        status: RunStatus.Pending,
        // An operator's replay starts the run over; a resume's re-run of a firing its pause kept
        // from starting does not: a lease it had still counts (at-most-once never leases it
        // again, and maxAttempts counts it), and the pause's reason is not its error.
        attempt: event.keepsAttempts ? run.attempt : 0,
        error: event.keepsAttempts ? undefined : run.error,
        checkAt: event.checkAt,
        replays: (run.replays ?? 0) + 1,
        replayedAt: event.now,
        replayedBy: event.by,
        finishedAt: undefined,
        retryAt: undefined,
        leaseExpiresAt: undefined,
        receiptHandle: undefined,
      };
    case "abandon":
      if (!isUnstartedOrLapsed(run, event.now) || run.final !== event.final) return undefined;
      return finished(run, event.status, event.reason, event.now);
    case "lose":
      if (run.status !== RunStatus.Leased || (run.leaseExpiresAt ?? 0) > event.now) return undefined;
      if (run.final !== event.final) return undefined;
      return finished(run, RunStatus.Lost, event.reason, event.now);
    case "revoke":
      // A job's last run is never revoked: it is what ends the job.
      if (!isUnfinished(run) || run.final) return undefined;
      return {
        ...finished(run, RunStatus.Cancelled, event.reason, event.now),
        fence: run.fence + 1,
        checkAt: undefined,
        leaseExpiresAt: undefined,
      };
    case "miss":
      // Never started, never replayed, not asked for by hand (those run however late they are).
      if (run.status !== RunStatus.Pending || run.attempt !== 0 || run.final !== event.final)
        return undefined;
      if (run.replays !== undefined || run.origin !== undefined) return undefined;
      return finished(run, RunStatus.Missed, event.reason, event.now);
    case "drop-retry":
      if (run.status !== RunStatus.Pending || run.attempt < 1 || run.final !== event.final) return undefined;
      return finished(run, RunStatus.DeadLettered, event.reason, event.now);
    case "wake": {
      const free = run.wakes === undefined || run.wakes === event.waiting || run.wakes === event.replacing;
      if (!isUnfinished(run) || !free) return undefined;
      return { ...run, wakes: event.waiting };
    }
    case "settle":
      // Only a finished run: a replayed one is unfinished again and needs its entry.
      if (run.checkAt === undefined || isUnfinished(run)) return undefined;
      return { ...run, checkAt: undefined };
    case "track":
      // Only a finished last run not in the index: its job's end waits for a pause or a sweep.
      if (!run.final || isUnfinished(run) || run.checkAt !== undefined) return undefined;
      return { ...run, checkAt: event.checkAt };
    case "mark-last":
      if (run.final || run.status === RunStatus.Cancelled) return undefined;
      return { ...run, final: true };
    case "recheck":
      if (run.checkAt !== event.expectedCheckAt) return undefined;
      return { ...run, checkAt: event.checkAt };
  }
}
