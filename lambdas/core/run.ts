import { RunStatus } from "@jobsched/contract";
import { formatInstant } from "./instant";

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
  /**
   * Its earlier attempts that failed and were retried, oldest first (decision 0062): the last
   * few, each with its error's beginning, so a run's history shows what its own fields (the
   * latest attempt's) overwrote. An attempt whose lease lapsed is not among them.
   */
  readonly failedAttempts?: readonly FailedAttempt[] | undefined;
}

/** An attempt that failed and was retried: its lease (attempt, fence), start, failure and error. */
export interface FailedAttempt {
  readonly attempt: number;
  readonly fence: number;
  readonly startedAt: number | undefined;
  readonly failedAt: number;
  readonly error: string;
}

export type RunOrigin = "manual" | "backfill";

/** Why a run was recorded missed when its job was paused: a resume looks for it (control-job.ts). */
export const PAUSED_RUN_REASON = "the job was paused before the run started";

/**
 * A run made but not written (decision 0051): the sweep or a create sends its message and writes
 * nothing; the message carries these, and the run's first write (its lease, or the step that
 * ends it unstarted: cancelled, missed, skipped) writes the item from them. Until then the run
 * is pending, never leased, fence 0, as a written one would be.
 */
export type RunSeed = Pick<
  Run,
  "runId" | "jobId" | "tenant" | "type" | "scheduledFor" | "final" | "createdAt"
>;

/** When a pending run may start: its scheduled instant, or a retry's. */
export function availableAt(run: Pick<Run, "scheduledFor" | "retryAt">): number {
  return Math.max(run.scheduledFor, run.retryAt ?? 0);
}

/** `jobId@scheduledFor`: stable across retries, for use as an idempotency key downstream. */
export function runKeyOf(jobId: string, scheduledFor: number): string {
  return `${jobId}@${formatInstant(scheduledFor)}`;
}
