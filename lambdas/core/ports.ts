import type { DueJob, Job, JobStatus, JobSummary } from "./job";
import type { Run, RunStatus } from "./run";

/**
 * Ports: what the core needs from storage and delivery, with no word of DynamoDB or SQS.
 * Adapters implement them and translate their SDK errors into domain errors.
 */

export interface Page<T> {
  readonly items: T[];
  /** Opaque; pass back to read the next page. Undefined on the last page. */
  readonly cursor: string | undefined;
}

/** Job definitions, the due index and the sweep cursors. */
export interface JobStore {
  /** Conditional put: "exists" (and nothing written) when a job with this id is stored. */
  createJob(job: Job): Promise<"created" | "exists">;
  getJob(jobId: string): Promise<Job | undefined>;
  /** Several jobs in one call (the lease step reads a batch's jobs at once); missing ones are absent. */
  getJobs(jobIds: readonly string[]): Promise<ReadonlyMap<string, Job>>;
  /**
   * Jobs filed under `dueKey` whose next run is before `before`, oldest first, with the read
   * capacity units the query consumed (for the sweep's metrics).
   */
  queryDue(
    dueKey: string,
    before: number,
    cursor?: string,
  ): Promise<Page<DueJob> & { readonly readUnits: number }>;
  /**
   * Moves a job past `from` once its run exists: to `next`, or out of the due index when there
   * is no next run. Conditional on the job still being at `from`; false when it was not (another
   * sweeper moved it first, or the tenant changed it).
   */
  advanceJob(jobId: string, from: number, next: number | undefined, now: number): Promise<boolean>;
  /** Marks an active job with no next run as completed; false when it was not in that state. */
  completeJob(jobId: string, now: number): Promise<boolean>;
  /**
   * Writes a changed job (pause, resume, cancel) if nobody changed it since it was read, i.e.
   * its updatedAt is still `expectedUpdatedAt`; false otherwise. Files it in the due index
   * exactly when it is active and has a next run.
   */
  replaceJob(job: Job, expectedUpdatedAt: number): Promise<boolean>;
  /** A tenant's jobs, newest first, optionally only of one status and type. */
  listJobs(
    tenant: string,
    filter: { readonly status?: JobStatus | undefined; readonly type?: string | undefined },
    limit: number,
    cursor?: string,
  ): Promise<Page<JobSummary>>;
  /** The oldest hour bucket a shard group may still hold due jobs in, if ever recorded. */
  getSweepCursor(group: number): Promise<number | undefined>;
  /** Moves a group's cursor forward; never backward. */
  advanceSweepCursor(group: number, bucket: number): Promise<void>;
}

export interface LeaseGrant {
  readonly workerId: string;
  /** When the worker gets the run: its due instant if the lease is granted a moment early. */
  readonly startsAt: number;
  readonly leaseExpiresAt: number;
  readonly receiptHandle: string;
  /** The time of the grant; a lease that lapsed before it may be taken over. */
  readonly now: number;
}

export interface RunOutcome {
  readonly status: Extract<RunStatus, "succeeded" | "failed">;
  readonly error: string | undefined;
  readonly now: number;
}

/** A run the repair pass should look at: it is in the repair index, so it has a check time. */
export type RepairCandidate = Pick<
  Run,
  "runId" | "jobId" | "type" | "status" | "scheduledFor" | "leaseExpiresAt"
> & {
  readonly checkAt: number;
};

/** Run records. */
export interface RunStore {
  /** Conditional put on (job id, scheduled instant): "exists" when that run was created before. */
  createRun(run: Run): Promise<"created" | "exists">;
  getRun(jobId: string, scheduledFor: number): Promise<Run | undefined>;
  /** The job's most recent runs, newest first. */
  listRecentRuns(jobId: string, limit: number): Promise<Run[]>;
  /** The job's runs, newest first, a page at a time. */
  listRuns(jobId: string, limit: number, cursor?: string): Promise<Page<Run>>;
  /**
   * Grants a lease: fence and attempt go up by one, in one conditional update with no read
   * first. The repair check time is left alone (it is an index key, and writing it would cost
   * an index write per lease): the repair pass finds a live lease there and looks again later. Conditional on the run existing and being leasable at `grant.now` (pending, or its
   * lease lapsed); undefined when it was not (finished, held by another worker, or gone).
   */
  leaseRun(jobId: string, scheduledFor: number, grant: LeaseGrant): Promise<Run | undefined>;
  /**
   * Records a leased run's outcome if `fence` still holds the lease. Returns the receipt
   * handle of the message that delivered it and whether it was its job's last run, or
   * undefined when the fence was stale.
   */
  finishRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    outcome: RunOutcome,
  ): Promise<{ receiptHandle: string | undefined; final: boolean } | undefined>;
  /**
   * Ends a run that must not execute: `cancelled` (its job is gone or cancelled) or `missed`
   * (its job was paused before it started), with the reason.
   */
  abandonRun(
    jobId: string,
    scheduledFor: number,
    status: "cancelled" | "missed",
    reason: string,
    now: number,
  ): Promise<void>;
  /** Unfinished runs in one repair partition whose check time is at or before `before`. */
  queryRepairCandidates(
    repairKey: string,
    before: number,
    limit: number,
    cursor?: string,
  ): Promise<Page<RepairCandidate>>;
  /** Sets a new check time if the run still has `expectedCheckAt`; false when it changed. */
  rescheduleCheck(run: RepairCandidate, expectedCheckAt: number, checkAt: number): Promise<boolean>;
}

/** The tick's fan-out of sweep work, one message per group of shards. */
export interface SweepQueue {
  dispatch(groups: readonly number[], tickAt: number): Promise<void>;
}

/** What a run message carries: enough to find the run; everything else is read at lease time. */
export interface RunMessage {
  readonly runId: string;
  readonly jobId: string;
  readonly scheduledFor: number;
  /** Lets the lease step skip runs of other types without reading them. */
  readonly type: string;
}

export interface ReceivedRunMessage {
  readonly message: RunMessage | undefined;
  readonly receiptHandle: string;
}

/** Delivery of due runs. The message's visibility timeout is the lease. */
export interface RunQueue {
  /** Sends each message with its delay (0-900 s); rejects if any could not be sent. */
  send(messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>): Promise<void>;
  receive(max: number, visibilitySeconds: number, waitSeconds: number): Promise<ReceivedRunMessage[]>;
  /** Makes a received message visible again at once, for another worker. */
  release(receiptHandle: string): Promise<void>;
  /** Keeps a received message invisible for `seconds` from now: the lease's new length. */
  extend(receiptHandle: string, seconds: number): Promise<void>;
  delete(receiptHandle: string): Promise<void>;
}
