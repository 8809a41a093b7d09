/** The states of jobs and runs, and the policies a job chooses, as the API spells them. */

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
  /** Never started: the job's previous run was still unfinished (overlapPolicy skip, buffer-one). */
  Skipped: "skipped",
  /**
   * An at-most-once run whose lease lapsed without a completion (its worker crashed or hung):
   * it may have run, partly or wholly, and is not run again; `error` says why.
   */
  Lost: "lost",
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/** What a job does with firings it missed (an outage, a pause): see the README. */
export const MissedRunPolicy = { CatchUp: "catch-up", RunOnce: "run-once", Skip: "skip" } as const;
export type MissedRunPolicy = (typeof MissedRunPolicy)[keyof typeof MissedRunPolicy];

/**
 * How a cron job treats local times that daylight-saving time repeats or skips (see the README's
 * DST section): `first-occurrence` (default) runs a repeated time once, at its first occurrence,
 * and a skipped time at the first instant after the gap; `every-occurrence` runs a repeated time
 * in both passes; `skip-gap` does not run a skipped time.
 */
export const DstPolicy = {
  FirstOccurrence: "first-occurrence",
  EveryOccurrence: "every-occurrence",
  SkipGap: "skip-gap",
} as const;
export type DstPolicy = (typeof DstPolicy)[keyof typeof DstPolicy];

/**
 * What a job does with a run that comes due while its previous run is unfinished (see the
 * README): `allow` (default) starts it anyway; `skip` records it skipped; `buffer-one` lets one
 * wait and skips the rest; `cancel-previous` revokes the running one's lease through its fence.
 */
export const OverlapPolicy = {
  Allow: "allow",
  Skip: "skip",
  BufferOne: "buffer-one",
  CancelPrevious: "cancel-previous",
} as const;
export type OverlapPolicy = (typeof OverlapPolicy)[keyof typeof OverlapPolicy];

/**
 * A job's delivery guarantee: `at-least-once` (default) runs a run again when its lease lapses;
 * `at-most-once` never leases a run twice (a lapsed lease is recorded `lost`) and never retries.
 */
export const Delivery = { AtLeastOnce: "at-least-once", AtMostOnce: "at-most-once" } as const;
export type Delivery = (typeof Delivery)[keyof typeof Delivery];

/**
 * How a `lambda` target is invoked: `sync` (default) waits for the function's answer, at most
 * 15 s (a function error, or no answer in time, is a failed attempt that retries); `async`
 * hands the run to Lambda's asynchronous invocation (`InvocationType: Event`), as EventBridge
 * Scheduler invokes: accepted (202) is success, the function may run up to 15 minutes, and its
 * own errors are Lambda's to retry (its asynchronous retries and destinations).
 */
export const LambdaInvocation = { Sync: "sync", Async: "async" } as const;
export type LambdaInvocation = (typeof LambdaInvocation)[keyof typeof LambdaInvocation];
