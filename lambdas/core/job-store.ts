import type { DueJob, Job, JobStatus, JobSummary } from "./job";
import type { Page } from "./ports";

// The job store's port: jobs, their due index (the shards' and the ahead partitions) and the
// sweeps' cursors. Re-exported by ports.ts, where the other ports are.

/** What a job listing may be narrowed to: a status, a type, and labels every job must carry. */
export interface JobFilter {
  readonly status?: JobStatus | undefined;
  readonly type?: string | undefined;
  readonly labels?: ReadonlyArray<readonly [string, string]> | undefined;
  /**
   * The jobs as shown, before the filter is matched: a one-off its run ended is completed
   * (decision 0057), which only its run says. Without it, as stored.
   */
  readonly show?: ((jobs: readonly Job[]) => Promise<readonly Job[]>) | undefined;
}

export interface JobStore {
  /** Conditional put: "exists" (and nothing written) when a job with this id is stored. */
  createJob(job: Job): Promise<"created" | "exists">;
  /**
   * The job as stored: a strongly consistent read, unless `eventual` (half the read units) where
   * a read a second old would do.
   */
  getJob(jobId: string, eventual?: boolean): Promise<Job | undefined>;
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
   * is no next run, then recording `last` (the firing of its last run, if one was made or
   * recorded) as its lastFiringAt. Conditional on the job still being at `from`; false when it
   * was not (another sweeper moved it first, or the tenant changed it).
   */
  advanceJob(
    jobId: string,
    from: number,
    next: number | undefined,
    now: number,
    last?: number,
    /** The runs this advance made (decision 0051): `through` is recorded, `from` if none is. */
    made?: { readonly from: number; readonly through: number },
  ): Promise<boolean>;
  /**
   * Takes a cancelled job out of the due index once its overdue firings are recorded;
   * conditional on it still being cancelled at `from`. Its updatedAt (the cancel) is kept.
   */
  closeCancelledJob(jobId: string, from: number): Promise<boolean>;
  /**
   * Marks an active job with no next run as completed; false when it was not in that state. With
   * `last` (the firing of the run that ended): only if that is the job's lastFiringAt, or it
   * has none.
   */
  completeJob(jobId: string, now: number, last?: number): Promise<boolean>;
  /**
   * Writes a changed job (pause, resume, cancel) if nobody changed it since it was read, i.e.
   * its updatedAt is still `expectedUpdatedAt`; false otherwise. Files it in the due index
   * exactly when isFiledDue says so.
   */
  replaceJob(job: Job, expectedUpdatedAt: number): Promise<boolean>;
  /**
   * overlapPolicy: records `runAt` as the job's active run, if the active run is still
   * `expected` (undefined: none recorded). False when another lease step claimed it first.
   * Moves updatedAt on by a millisecond, so a replaceJob that read the job before fails and
   * reads again instead of writing the old active run back.
   */
  claimRunSlot(jobId: string, expected: number | undefined, runAt: number): Promise<boolean>;
  /**
   * Files the job's labels for label listings, and unfiles the label keys in `removed`. Called
   * before an update writes new labels (the job item is the truth; a filing it no longer carries
   * matches nothing) and after it removed some.
   */
  fileLabels(
    job: Pick<Job, "jobId" | "tenant" | "createdAt" | "labels">,
    removed: readonly string[],
  ): Promise<void>;
  /** A tenant's jobs, newest first, optionally only of one status and type and with labels. */
  listJobs(tenant: string, filter: JobFilter, limit: number, cursor?: string): Promise<Page<JobSummary>>;
  /** The oldest hour bucket a shard group may still hold due jobs in, if ever recorded. */
  getSweepCursor(group: number): Promise<number | undefined>;
  /** Moves a group's cursor forward; never backward. */
  advanceSweepCursor(group: number, bucket: number): Promise<void>;
  /**
   * The one-offs made ahead filed under `aheadKey` (decision 0058) whose firing is at or after
   * `from` and before `before`, oldest first: each job's id and firing (as the index has them,
   * which may lag the job), with the read capacity units the query consumed.
   */
  queryAhead(
    aheadKey: string,
    from: number,
    before: number,
    cursor?: string,
  ): Promise<Page<AheadEntry> & { readonly readUnits: number }>;
  /**
   * Decision 0058's per-group ahead cursor, as code before decision 0059 left it: read only for a
   * group the ahead ledger has never recorded (the first tick after an upgrade).
   */
  getAheadCursor(group: number): Promise<number | undefined>;
  /** The ahead ledger (decision 0059): per group, how far ticks have handed out its slices. */
  getAheadLedger(): Promise<AheadLedger>;
  /**
   * Records the slices a tick handed out, in one write: each group's `through`, if its entry is
   * still as the tick read it (`read`: its end, rewind and count of rewinds). False, and nothing
   * written, when any of them changed.
   * Recording a group consumes its rewind (the slice handed out began there).
   */
  moveAheadLedger(moves: readonly AheadLedgerMove[]): Promise<boolean>;
  /**
   * A sweep could not send its slice from `from` on: the group's next tick hands it out again.
   * The rewind moves `rewoundTo` back (never forward) and always counts in `rewinds`.
   */
  rewindAheadLedger(group: number, from: number): Promise<void>;
}

/** A group's entry in the ahead ledger (decision 0059). */
export interface AheadLedgerEntry {
  /** The end of the last slice a tick handed out: firings before it were given to a sweep. */
  readonly through: number;
  /** The earliest firing a sweep failed to send since, if one did: handed out again from there. */
  readonly rewoundTo?: number | undefined;
  /**
   * How many rewinds the group has had, ever. Every rewind counts, one that found `rewoundTo`
   * already earlier too: a tick's write expects the count it read, so a sweep that fails while
   * its own tick's write is still to come (its slice began at `rewoundTo`) always fails that
   * write for its group, and the rewind is never erased by it.
   */
  readonly rewinds?: number | undefined;
}

export type AheadLedger = ReadonlyMap<number, AheadLedgerEntry>;

/** One group's move in a tick's write of the ahead ledger. */
export interface AheadLedgerMove {
  readonly group: number;
  readonly read: AheadLedgerEntry | undefined;
  readonly through: number;
}

/** An entry of the due index's ahead partitions: a one-off made ahead, and its firing. */
export interface AheadEntry {
  readonly jobId: string;
  readonly at: number;
}
