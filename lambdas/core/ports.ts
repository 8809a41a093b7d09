import type { FailedAttempt, Run, RunSeed, RunStatus } from "./run";

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
export type {
  AheadEntry,
  AheadLedger,
  AheadLedgerEntry,
  AheadLedgerMove,
  JobFilter,
  JobStore,
} from "./job-store";

export interface LeaseGrant {
  readonly workerId: string;
  /** When the worker gets the run: its due instant if the lease is granted a moment early. */
  readonly startsAt: number;
  readonly leaseExpiresAt: number;
  readonly receiptHandle: string;
  /** The time of the grant; a lease that lapsed before it may be taken over. */
  readonly now: number;
  /** At-most-once: only a run never leased before (a lapsed lease is not taken over). */
  readonly firstOnly?: boolean;
  /**
   * A run made but not written: the lease writes it (decision 0051). A seed marked last makes a
   * written run last too (another schedule's copy wrote it first: decision 0046's addendum).
   */
  readonly seed?: RunSeed | undefined;
}

export interface RunOutcome {
  readonly status: Extract<RunStatus, "succeeded" | "dead-lettered">;
  readonly error: string | undefined;
  readonly now: number;
  /**
   * Whether the run is its job's last, as the caller knows it: the write is conditional on it
   * (a wrong guess writes nothing). A last run in the repair index keeps its entry when it
   * finishes, with its finished status, until settleFinalRun: should the caller die before its
   * job is marked, the repair pass finds it there and marks the job. One carried by its message
   * has no entry: the message, deleted only after the job is marked, comes back (decision 0045).
   */
  readonly final: boolean;
}

export interface RetryPlan {
  readonly error: string | undefined;
  /** Not leased again before this instant. */
  readonly retryAt: number;
  /** When the repair pass should look, should the retry's message be lost. */
  readonly checkAt: number;
  readonly now: number;
  /** The run's failed attempts with this one, as kept (see failedAttemptsAfter). */
  readonly failedAttempts?: readonly FailedAttempt[] | undefined;
}

/** A run the repair pass should look at: it is in the repair index, so it has a check time. */
export type RepairCandidate = Pick<
  Run,
  "runId" | "jobId" | "tenant" | "type" | "status" | "scheduledFor" | "leaseExpiresAt" | "retryAt"
> & {
  readonly checkAt: number;
};

/** What finishing a run tells its caller: the message to delete, and what the run left to do. */
export interface FinishedRun {
  readonly receiptHandle: string | undefined;
  readonly final: boolean;
  /** Whether it is still in the repair index (a last run that was in it stays until settled). */
  readonly tracked: boolean;
  /** overlapPolicy buffer-one: the run that waited for this one, to be sent on its way now. */
  readonly wakes?:
    | { readonly scheduledFor: number; readonly tenant: string; readonly type: string }
    | undefined;
}

/** Run records. */
export interface RunStore {
  /** Conditional put on (job id, scheduled instant): "exists" when that run was created before. */
  createRun(run: Run): Promise<"created" | "exists">;
  getRun(jobId: string, scheduledFor: number): Promise<Run | undefined>;
  /** The job's most recent runs, newest first. */
  listRecentRuns(jobId: string, limit: number): Promise<Run[]>;
  /**
   * The job's runs scheduled from `from` through `to` (both included), oldest first, read
   * consistently: the sweep's one read of a block's firings (decision 0051).
   */
  listRunsBetween(jobId: string, from: number, to: number): Promise<Run[]>;
  /** The job's latest run scheduled before `instant`, read consistently; undefined when none. */
  latestRunBefore(jobId: string, instant: number): Promise<Run | undefined>;
  /** The job's runs, newest first, a page at a time. */
  listRuns(jobId: string, limit: number, cursor?: string): Promise<Page<Run>>;
  /** The job's runs scheduled before `instant`, newest first, at most `limit`. */
  listRunsBefore(jobId: string, instant: number, limit: number): Promise<Run[]>;
  /**
   * Grants a lease: fence and attempt go up by one, in one conditional update with no read
   * first. The repair check time is left alone (it is an index key, and writing it would cost
   * an index write per lease): the repair pass finds a live lease there and looks again later. Conditional on the run existing and being leasable at `grant.now` (pending, or its
   * lease lapsed); undefined when it was not (finished, held by another worker, or gone). A
   * run this receive already holds (its lease's answer lost: decision 0053) answers as is.
   */
  leaseRun(jobId: string, scheduledFor: number, grant: LeaseGrant): Promise<Run | undefined>;
  /**
   * Records a leased run's outcome if `fence` still holds the lease (and, given `tenants`, the
   * run belongs to one of them: a worker's completion). Returns the receipt handle of the
   * message that delivered it and whether it was its job's last run, or undefined when the
   * fence was stale or the run is another tenant's. The same outcome recorded already (its
   * answer lost: decision 0053) answers as recorded, with no handle.
   */
  finishRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    outcome: RunOutcome,
    tenants?: readonly string[],
  ): Promise<FinishedRun | undefined>;
  /**
   * Puts a failed run back to pending for a retry at `plan.retryAt` if `fence` still holds the
   * lease. Returns the receipt handle of the message that delivered it, or undefined when stale.
   * A repeat of a retry it already made (the SDK's, after a lost answer: decision 0053) answers
   * as applied, with no handle: the first write took it.
   */
  retryRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    plan: RetryPlan,
  ): Promise<{ receiptHandle: string | undefined } | undefined>;
  /**
   * Extends a live lease held with `fence` to `leaseExpiresAt`. Returns the receipt handle of
   * the delivering message, or undefined when the fence is stale or the lease has lapsed.
   */
  heartbeatRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    leaseExpiresAt: number,
    now: number,
  ): Promise<{ receiptHandle: string | undefined } | undefined>;
  /**
   * Gives back a lease held with `fence` whose run was never handed over (the dispatcher found
   * no place to deliver it in time): the run is pending again, leasable at once, and the
   * attempt the lease counted is taken back, so that a run never delivered is neither a failed
   * attempt nor, under at-most-once, a run that may have run. The fence stays raised. Returns
   * the run as given back, or undefined when the fence no longer holds the lease. A run already
   * pending under `fence` (its own give-back, its answer lost: decision 0053) answers as is.
   */
  returnLease(jobId: string, scheduledFor: number, fence: number, now: number): Promise<Run | undefined>;
  /** A tenant's dead-lettered runs, most recent first. */
  listDeadLetters(tenant: string, limit: number, cursor?: string): Promise<Page<Run>>;
  /** How many runs are dead-lettered, across tenants (the dead-letter depth an alarm watches). */
  countDeadLetters(): Promise<number>;
  /**
   * Returns a dead-lettered run (or, when `from` says so, a missed one: a resumed job's run
   * that its pause kept from starting) to pending with its attempts reset, counting the replay;
   * with `keepsAttempts` (a resume's re-run), its attempts kept and its error cleared.
   * Undefined when the run is not in that state (any more).
   */
  replayRun(
    jobId: string,
    scheduledFor: number,
    replay: {
      readonly by: string;
      readonly now: number;
      readonly checkAt: number;
      readonly keepsAttempts?: boolean | undefined;
    },
    from?: "dead-lettered" | "missed",
  ): Promise<Run | undefined>;
  /**
   * Ends a run that must not execute: `cancelled` (its job is gone or cancelled), `missed` (its
   * job was paused before it started) or `skipped`, with the reason; conditional on `final`
   * being what the run says (a last run keeps its repair-index entry, as finishRun's do).
   * Answers the run as recorded, or undefined when it was not unstarted (or lapsed) any more.
   */
  abandonRun(
    jobId: string,
    scheduledFor: number,
    status: "cancelled" | "missed" | "skipped",
    reason: string,
    now: number,
    final?: boolean,
    /** A run made but not written: ending it writes it (decision 0051). */
    seed?: RunSeed,
  ): Promise<Run | undefined>;
  /**
   * A retry waiting (pending, attempted before) whose job became at-most-once: it is never
   * run again, so it is dead-lettered with the reason (an operator may replay it).
   */
  dropRetry(
    jobId: string,
    scheduledFor: number,
    drop: { readonly reason: string; readonly now: number; readonly final: boolean },
  ): Promise<Run | undefined>;
  /**
   * At-most-once: records a leased run whose lease lapsed by `now` as `lost` with the reason
   * (a last run keeps its repair-index entry until its job is marked, as finishRun's do).
   * Undefined when it was not in that state (completed, or its lease still held).
   */
  loseRun(
    jobId: string,
    scheduledFor: number,
    loss: { readonly reason: string; readonly now: number; readonly final: boolean },
  ): Promise<Run | undefined>;
  /**
   * overlapPolicy buffer-one: notes on an unfinished run (pending or leased) the run that waits
   * for it, unless another already waits (`replacing`: a noted run known to have finished, whose
   * place is free). True when `waiting` is (now) the one noted; false when the run finished
   * meanwhile or another run waits.
   */
  setWake(jobId: string, scheduledFor: number, waiting: number, replacing?: number): Promise<boolean>;
  /**
   * overlapPolicy cancel-previous: ends an unfinished run as cancelled with the reason and
   * raises its fence, so its holder's heartbeat and completion are refused (409). Undefined when
   * it had finished, or is its job's last run (that one ends the job; it is never revoked).
   */
  revokeRun(jobId: string, scheduledFor: number, reason: string, now: number): Promise<Run | undefined>;
  /**
   * Records a run that never started (pending, no attempt yet, never replayed, no `origin`) as missed, with
   * the reason; answers the run as recorded, or undefined if it had started or is finished (or
   * `final` is not what the run says). A last run stays in the repair index, as finishRun's do.
   */
  missRun(
    jobId: string,
    scheduledFor: number,
    miss: {
      readonly reason: string;
      readonly now: number;
      readonly final: boolean;
      /** A run made but not written: recording it missed writes it (decision 0051). */
      readonly seed?: RunSeed | undefined;
    },
  ): Promise<Run | undefined>;
  /**
   * Takes a finished last run out of the repair index, once its job is marked (or could not
   * be: it was paused or cancelled). Does nothing to a run that is not finished (replayed).
   */
  settleFinalRun(jobId: string, scheduledFor: number): Promise<void>;
  /**
   * Puts a finished last run with no repair-index entry into the index from `checkAt`: its job
   * could not be ended yet (paused, or not yet moved past it), and its message is about to go.
   * False when the run is not such a run (nothing is written).
   */
  trackFinalRun(jobId: string, scheduledFor: number, checkAt: number): Promise<boolean>;
  /**
   * Marks a written run its job's last, when a copy of its message says so and the run does not
   * (decision 0046's addendum): the run as it now is, or undefined when it is not written, is
   * cancelled, or is marked already.
   */
  markLastRun(jobId: string, scheduledFor: number): Promise<Run | undefined>;
  /**
   * Unfinished runs, and finished last runs whose job may not be marked yet, in one repair
   * partition, whose check time is at or before `before`.
   */
  queryRepairCandidates(
    repairKey: string,
    before: number,
    limit: number,
    cursor?: string,
  ): Promise<Page<RepairCandidate>>;
  /**
   * Runs with no repair-index entry whose message may be all that drives them: unfinished ones
   * (a scheduled run's message carries it: decision 0043) and finished last runs not cancelled
   * (their message re-drives the job's end: decision 0045). Read by a whole-table scan: only
   * for a queue known to have lost every message (the local SQS emulator after a restart),
   * never in AWS.
   */
  scanUntracked(limit: number, cursor?: string): Promise<Page<Run>>;
  /** Sets a new check time if the run still has `expectedCheckAt`; false when it changed. */
  rescheduleCheck(run: RepairCandidate, expectedCheckAt: number, checkAt: number): Promise<boolean>;
}

/**
 * A tenant's webhook signing secret (Standard Webhooks: `whsec_` and base64 of the key), and
 * after a rotation the previous one, which still signs deliveries until `previousValidUntil`.
 */
export interface WebhookSecret {
  readonly current: string;
  /** When `current` became current (the last rotation). */
  readonly createdAt: number;
  /**
   * The secret the next rotation makes current, drawn now and signing beside the current one
   * (decision 0036); absent on secrets stored before it existed.
   */
  readonly next?: string | undefined;
  readonly previous?: string | undefined;
  readonly previousValidUntil?: number | undefined;
}

/** Where the webhook secrets are kept: one per tenant. */
export interface WebhookSecretStore {
  get(tenant: string): Promise<WebhookSecret | undefined>;
  /**
   * Stores `secret` as the tenant's, if its secret is still `expected` (undefined: none yet);
   * false when another rotation came first.
   */
  put(tenant: string, secret: WebhookSecret, expected: string | undefined): Promise<boolean>;
}

/** The tick's fan-out of sweep work, one message per group of shards. */
export interface SweepQueue {
  /** Sends one message a group; throws when any is refused (the tick then records nothing). */
  dispatch(messages: readonly SweepMessage[]): Promise<void>;
}

/** A group's sweep, as a tick hands it out. */
export interface SweepMessage {
  readonly group: number;
  readonly tickAt: number;
  /**
   * The slice of the group's one-offs made ahead this sweep sends: firings at or after `from`
   * and before `to` (decision 0059). None in a message from code before it.
   */
  readonly ahead?: AheadSlice | undefined;
}

export interface AheadSlice {
  readonly from: number;
  readonly to: number;
}

/** What a run message carries: enough to find the run; everything else is read at lease time. */
export interface RunMessage {
  readonly runId: string;
  readonly jobId: string;
  readonly scheduledFor: number;
  /** The queue is split by tenant and type: each (tenant, type) has a lane of its own. */
  readonly tenant: string;
  readonly type: string;
  /** A retry's message: not to be started before this instant. */
  readonly notBefore?: number | undefined;
  /** A backfilled run's: it runs beside the job's other runs, whatever its overlap policy. */
  readonly backfill?: true | undefined;
  /**
   * A run made but not written (decision 0051): when it was made. Its item is written first by
   * its lease, or by the step that ends it unstarted, from what the message carries.
   */
  readonly madeAt?: number | undefined;
  /** Such a run's: it is its job's last. */
  readonly final?: true | undefined;
  /**
   * A run made by a create with an idempotency key, before it stored the job: the tag of the
   * create's request (requestTagOf). Another create with the key may have stored the job; its
   * run only is the job's (decision 0052).
   */
  readonly request?: string | undefined;
}

export interface ReceivedRunMessage {
  readonly message: RunMessage | undefined;
  readonly receiptHandle: string;
  /** How often SQS has handed this message out, this time included (when known). */
  readonly receiveCount?: number;
}

export interface ReceiveRequest {
  readonly types: readonly string[];
  /** Only these tenants' lanes: the tenants the asking worker serves. */
  readonly tenants: readonly string[];
  readonly max: number;
  readonly visibilitySeconds: number;
  readonly waitSeconds: number;
  /**
   * A lane (laneKeyOf) to poll first, whatever the rotation: the one the worker's lane
   * listening saw a message in (decision 0049), so a request after a ring always reaches it.
   */
  readonly first?: string | undefined;
  /**
   * Lanes that filled their share may take what the others left only when the runs they gave
   * are all due before this instant (epoch ms): a backlog fills a request, but runs leased ahead
   * of a dense second come at fair shares, leaving the workers room for the other lanes' runs
   * of that second that become visible a moment later.
   */
  readonly topUpDueBefore: number;
}

/** The lane a run travels in: one per (tenant, type). */
export function laneKeyOf(run: Pick<RunMessage, "tenant" | "type">): string {
  return `${run.tenant}\n${run.type}`;
}

/**
 * Delivery of due runs, in one lane per (tenant, type), so that a worker only sees the types
 * it asks for and one tenant's backlog does not hold up another's runs. The message's
 * visibility timeout is the lease.
 */
export interface RunQueue {
  /** Sends each message to its lane with its delay (0-900 s); rejects if any could not be sent. */
  send(messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>): Promise<void>;
  /**
   * Up to `max` messages of the given types and tenants, a fair share from each (tenant, type)
   * lane; lanes that filled their share may also take what the others left (see topUpDueBefore).
   * When nothing is ready it waits
   * up to `waitSeconds` for a message, but once one lane has something it never waits longer
   * than a one-second poll for the others.
   */
  receive(request: ReceiveRequest): Promise<ReceivedRunMessage[]>;
  /** Makes a received message visible again at once, for another worker. */
  release(receiptHandle: string): Promise<void>;
  /**
   * Sets many received messages' visibility at once (0: visible now), batched per queue. Never
   * rejects: a change that fails is dropped (the message only shows up sooner, and the lease
   * step sends it back again) and its receipt handle returned, for the caller to log.
   */
  hide(changes: ReadonlyArray<{ receiptHandle: string; seconds: number }>): Promise<readonly string[]>;
  delete(receiptHandle: string): Promise<void>;
  /**
   * Deletes many received messages, batched per queue. Never rejects: returns the receipt
   * handles it could not delete (their messages come back and are dropped by the lease step).
   */
  deleteBatch(receiptHandles: readonly string[]): Promise<readonly string[]>;
  /**
   * About how many messages wait to be received in a (tenant, type) lane (SQS's approximate
   * count of visible messages; not those in flight or delayed); 0 for a lane that does not
   * exist. The repair pass tells a run whose message waits in a backlog from one whose message
   * is lost by it.
   */
  laneBacklog(tenant: string, type: string): Promise<number>;
  /**
   * Deletes the lanes no sender has used since `idleBefore` whose queues hold nothing (no
   * visible, in-flight or delayed message); a later send creates the lane again. Stops starting
   * work after `budgetMs`; what it did not reach waits for the next call.
   */
  retireIdleLanes(idleBefore: number, now: number, budgetMs: number): Promise<LaneRetirement>;
}

/** What one pass of idle-lane deletion did. */
export interface LaneRetirement {
  /** Lanes (registry entries) looked at. */
  readonly examined: number;
  /** Lanes deleted: their tenant and type. */
  readonly retired: ReadonlyArray<{ readonly tenant: string; readonly type: string }>;
  /** Idle lanes kept because their queue still held messages (e.g. a type no worker serves). */
  readonly kept: number;
  /** Lanes whose deletion failed (each message names the lane); the pass went on. */
  readonly errors: readonly string[];
  /** Whether every lane was looked at within the budget. */
  readonly finished: boolean;
}

// The per-tenant limits (a start's rate, a create's quotas) are their own concept: tenant-limits.ts.
export type { Admission, RateLimiter, TenantQuota, TenantQuotas } from "./tenant-limits";
