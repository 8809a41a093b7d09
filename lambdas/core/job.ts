import { JobStatus, type OverlapPolicy } from "@jobsched/contract";
import type { BackoffPolicy } from "./backoff";
import type { MissedRunPolicy } from "./missed-runs";
import type { Schedule } from "./schedule/schedule";
import type { Target } from "./target";

/**
 * A job: the definition a tenant submitted, and where it stands. Runs are separate records
 * (run.ts); a job only remembers the next instant it still has to create a run for.
 */
export { JobStatus };

/** Who changed a job's state, and when. The job keeps the most recent MAX_AUDIT_ENTRIES. */
export interface AuditEntry {
  readonly action: "created" | "updated" | "paused" | "resumed" | "cancelled";
  readonly by: string;
  readonly at: number;
  /** Why, when the caller said (pause). */
  readonly reason?: string;
  /** The fields an update changed. */
  readonly fields?: readonly string[];
}
export const MAX_AUDIT_ENTRIES = 50;

export interface Job {
  readonly jobId: string;
  readonly tenant: string;
  readonly type: string;
  readonly payload: unknown;
  readonly schedule: Schedule;
  readonly status: JobStatus;
  /**
   * The next instant a run must be created for; undefined when none is left. On a cancelled
   * job: the first of the firings that were due at the cancel but have no record yet (see
   * isFiledDue); undefined once they have.
   */
  readonly nextRunAt: number | undefined;
  readonly missedRuns: MissedRunPolicy;
  /** What a run due while the previous one is unfinished does (overlap.ts); absent: allow. */
  readonly overlapPolicy?: OverlapPolicy | undefined;
  /** Key/value pairs to group and find jobs by (absent: none). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** `at-most-once`: a run is never leased twice nor retried (absent: at-least-once). */
  readonly delivery?: "at-most-once" | undefined;
  /** Push delivery: the dispatcher calls this target; the job's type is its kind (`@https`...). */
  readonly target?: Target | undefined;
  /**
   * With an overlap policy: the run that last started (its scheduled instant), which a run
   * coming due checks for being unfinished. Claimed by the lease step, never by the sweep.
   */
  readonly activeRunAt?: number | undefined;
  /**
   * The firing whose run is the job's last (its scheduled instant), written by the sweep's
   * advance that left the job no next run. Only that run's end completes the job: a run marked
   * last before a schedule change gave the job later firings is not its last any more
   * (decision 0046). Absent on jobs advanced before it was kept: whichever last run finishes ends them.
   */
  readonly lastFiringAt?: number | undefined;
  /**
   * A one-off created more than its sweep's reach ahead (decision 0058): its run was made at
   * create (`lastFiringAt` is this firing, no next run), and the sweep that reaches this instant
   * sends its message, reading it from the due index's ahead partitions and writing nothing to
   * the job. It stays while the job does; it files the job only while it is the job's
   * `lastFiringAt` (isFiledAhead), so a schedule change that supersedes the run unfiles it.
   */
  readonly madeAheadAt?: number | undefined;
  /**
   * The runs its sweeps made under its current schedule (decision 0051): every firing of it
   * from `madeFrom` through `madeThrough` was made (its run carried by its message until its
   * lease writes it) or recorded missed. Written by the advances that make them (`madeFrom` by
   * the first); a schedule change starts them again. Absent on jobs advanced before they were
   * kept: their runs are all written.
   */
  readonly madeFrom?: number | undefined;
  readonly madeThrough?: number | undefined;
  readonly maxLatenessMs: number | undefined;
  readonly maxAttempts: number;
  readonly retry: BackoffPolicy;
  readonly leaseSeconds: number;
  readonly idempotencyKey: string | undefined;
  /** The job's id in the deployment it was exported from (jobsched import jobs), if imported. */
  readonly importedFrom?: string | undefined;
  /** Hash of the create request, to tell a retry from a conflicting reuse of the key. */
  readonly requestHash: string;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly updatedAt: number;
  /**
   * The definition's version: 1 at the create, one more with every change a caller makes
   * (update, pause, resume, cancel), never with the sweep moving the next run on. The API's
   * ETag; an update with If-Match naming another version is refused (412).
   */
  readonly version: number;
  readonly audit: readonly AuditEntry[];
}

/**
 * Whether a job belongs in the due index: an active job with a next run, or a cancelled one
 * whose overdue firings still need their cancelled records (the sweep writes them should the
 * cancel die before it has).
 */
export function isFiledDue(job: Pick<Job, "status" | "nextRunAt">): boolean {
  return (
    job.nextRunAt !== undefined && (job.status === JobStatus.Active || job.status === JobStatus.Cancelled)
  );
}

/**
 * Whether a job sits in the due index's ahead partitions (decision 0058): a one-off made ahead
 * at create whose run is still its last firing, active or paused (a paused one's message is
 * sent still, and its lease records the firing missed in the pause, as for any made run).
 */
export function isFiledAhead(
  job: Pick<Job, "status" | "nextRunAt" | "lastFiringAt" | "madeAheadAt"> & {
    readonly schedule: { readonly kind: string };
  },
): boolean {
  return (
    job.schedule.kind === "once" &&
    job.madeAheadAt !== undefined &&
    job.madeAheadAt === job.lastFiringAt &&
    job.nextRunAt === undefined &&
    (job.status === JobStatus.Active || job.status === JobStatus.Paused)
  );
}

/**
 * Whether a one-off made ahead at create has not been sent: filed ahead, and its group's place
 * in the ahead ledger (`aheadSentThrough`, decision 0059; undefined while none was recorded) is
 * not past its firing.
 */
export function isUnsentAhead(
  job: Parameters<typeof isFiledAhead>[0],
  aheadSentThrough: number | undefined,
): boolean {
  return (
    isFiledAhead(job) &&
    job.madeAheadAt !== undefined &&
    (aheadSentThrough === undefined || job.madeAheadAt >= aheadSentThrough)
  );
}

/** What a sweep sees of a job in the due index: enough to plan its runs and move it on. */
export type DueJob = Pick<
  Job,
  "jobId" | "tenant" | "type" | "status" | "schedule" | "missedRuns" | "maxLatenessMs"
> & {
  readonly nextRunAt: number;
};

/** A job as the list endpoint shows it: no payload, no audit trail. */
export type JobSummary = Pick<
  Job,
  "jobId" | "type" | "status" | "schedule" | "nextRunAt" | "createdAt" | "updatedAt"
> &
  Partial<Pick<Job, "lastFiringAt" | "madeAheadAt">>;
