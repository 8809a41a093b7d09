import { RunStatus } from "@jobsched/contract";
import { runIdOf } from "./ids";
import { formatInstant } from "./instant";
import type { DueJob } from "./job";
import type { MissedFiring } from "./missed-runs";

/**
 * A run: one execution of a job at one scheduled instant. Its key (job id, scheduled instant)
 * is unique, so two sweepers can never both create the 09:00 run. Its states (RunStatus) are
 * part of the API contract (packages/contract/src/statuses.ts).
 */
export { RunStatus };

export interface Run {
  readonly runId: string;
  readonly jobId: string;
  readonly tenant: string;
  readonly type: string;
  readonly scheduledFor: number;
  readonly status: RunStatus;
  /** Leases granted so far. */
  readonly attempt: number;
  /** Increases with every lease; only the holder of the latest fence may complete. */
  readonly fence: number;
  readonly createdAt: number;
  /** When the latest lease was granted: the run's start as far as the scheduler knows. */
  readonly startedAt: number | undefined;
  readonly leaseExpiresAt: number | undefined;
  readonly workerId: string | undefined;
  readonly finishedAt: number | undefined;
  readonly error: string | undefined;
  /** When the repair pass should next look at this run; undefined once finished. */
  readonly checkAt: number | undefined;
  /** The job's last run (a one-off, or the last firing before endAt): finishing it ends the job. */
  readonly final: boolean;
  /** A failed attempt's retry is not leased before this instant. */
  readonly retryAt?: number | undefined;
  /** How often an operator replayed it from the dead letters, the last time and by whom. */
  readonly replays?: number | undefined;
  readonly replayedAt?: number | undefined;
  readonly replayedBy?: string | undefined;
  /**
   * A missed record that stands for a long backlog of firings (see planRuns): how many, from
   * scheduledFor through this instant.
   */
  readonly missedCount?: number | undefined;
  readonly missedThrough?: number | undefined;
  /**
   * A run the sweep did not make: `manual` (POST .../trigger, at the instant it was asked for,
   * never a firing's) or `backfill` (a past firing, POST .../backfill). Such a run was asked for
   * late on purpose, so maxLateness never records it missed.
   */
  readonly origin?: RunOrigin | undefined;
  /**
   * overlapPolicy buffer-one: the run that waits for this one (its scheduled instant), sent on
   * its way the moment this one finishes.
   */
  readonly wakes?: number | undefined;
}

export type RunOrigin = "manual" | "backfill";

/** Why a run was recorded missed when its job was paused: a resume looks for it (control-job.ts). */
export const PAUSED_RUN_REASON = "the job was paused before the run started";

/** When a pending run may start: its scheduled instant, or a retry's. */
export function availableAt(run: Pick<Run, "scheduledFor" | "retryAt">): number {
  return Math.max(run.scheduledFor, run.retryAt ?? 0);
}

/** `jobId@scheduledFor`: stable across retries, for use as an idempotency key downstream. */
export function runKeyOf(jobId: string, scheduledFor: number): string {
  return `${jobId}@${formatInstant(scheduledFor)}`;
}

export function newRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  scheduledFor: number,
  now: number,
  repairGraceMs: number,
  final = false,
): Run {
  return {
    runId: runIdOf(job.jobId, scheduledFor),
    jobId: job.jobId,
    tenant: job.tenant,
    type: job.type,
    scheduledFor,
    status: RunStatus.Pending,
    attempt: 0,
    fence: 0,
    createdAt: now,
    startedAt: undefined,
    leaseExpiresAt: undefined,
    workerId: undefined,
    finishedAt: undefined,
    error: undefined,
    checkAt: Math.max(scheduledFor, now) + repairGraceMs,
    final,
  };
}

/**
 * The record of a firing that will not run, with the reason (or of a long backlog of them). The record of a job's last
 * firing is `final` and, like any finished last run, waits in the repair index (from `checkAt`)
 * until its job is marked.
 */
export function missedRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  firing: MissedFiring,
  now: number,
  last?: { readonly final: true; readonly checkAt: number },
): Run {
  return {
    ...newRun(job, firing.scheduledFor, now, 0, last?.final),
    status: RunStatus.Missed,
    finishedAt: now,
    error: firing.reason,
    checkAt: last?.checkAt,
    ...(firing.summary ? { missedCount: firing.summary.count, missedThrough: firing.summary.through } : {}),
  };
}

/** The record of a firing that came due but will never run because its job was cancelled. */
export function cancelledRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  scheduledFor: number,
  now: number,
  reason: string,
): Run {
  return { ...missedRun(job, { scheduledFor, reason }, now), status: RunStatus.Cancelled };
}

/**
 * When a run may next be leased: a pending run from its scheduled instant (or its retry's), a
 * leased one when its lease ends; never, once finished. The DynamoDB store keeps this instant
 * on the row (`availableAt`) and leases with one comparison against it; the in-memory store
 * calls this. The store conformance suite runs both on the same scenarios.
 */
export function leasableFrom(run: Run): number | undefined {
  if (run.status === RunStatus.Pending) return availableAt(run);
  if (run.status === RunStatus.Leased) return run.leaseExpiresAt ?? 0;
  return undefined;
}

/** Whether a lease that starts the run at `startsAt` may be granted (RunStore.leaseRun). */
export function isLeasableAt(run: Run, startsAt: number): boolean {
  const from = leasableFrom(run);
  return from !== undefined && from <= startsAt;
}

/**
 * Whether a run may be ended without running (RunStore.abandonRun): it has not started (pending,
 * whenever it is due), or its lease lapsed by `now`.
 */
export function isUnstartedOrLapsed(run: Run, now: number): boolean {
  return (
    run.status === RunStatus.Pending || (run.status === RunStatus.Leased && (run.leaseExpiresAt ?? 0) <= now)
  );
}
