/** The states a job, a run and a missed-run policy can be in, as the API spells them. */

export const JobStatus = {
  Active: "active",
  Paused: "paused",
  Cancelled: "cancelled",
  Completed: "completed",
} as const;
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];

/**
 * A run's states:
 *
 *   pending --lease--> leased --complete(succeeded)--> succeeded
 *      ^                |  ^ \--complete(failed, retryable, attempts left)--> pending, retryAt
 *      |                |  +--- lease lapsed: leased again with a higher fence
 *      |                +--complete(failed, permanent or last attempt)--> dead-lettered
 *      +------------------------- replay (attempts reset, lineage kept) ------------+
 */
export const RunStatus = {
  Pending: "pending",
  Leased: "leased",
  Succeeded: "succeeded",
  /** Failed for good (a permanent error, or no attempts left); waits for an operator's replay. */
  DeadLettered: "dead-lettered",
  Cancelled: "cancelled",
  /** Never started: its firing was missed (outage, pause, maxLateness); `error` says why. */
  Missed: "missed",
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/** What a job does with firings it missed (an outage, a pause): see the README. */
export const MissedRunPolicy = { CatchUp: "catch-up", RunOnce: "run-once", Skip: "skip" } as const;
export type MissedRunPolicy = (typeof MissedRunPolicy)[keyof typeof MissedRunPolicy];
