import type { Caller } from "../../lambdas/core/caller";
import { type Clock, FixedClock } from "../../lambdas/core/clock";
import type { SchedulerDeps } from "../../lambdas/core/deps";
import { type DueJob, isFiledAhead, isFiledDue, type Job, type JobSummary } from "../../lambdas/core/job";
import { aheadKeyOf, bucketOf, dueKeyOf, groupOf, repairKeyOf, shardOf } from "../../lambdas/core/keys";
import {
  type RunEvent,
  type RunRecord,
  runBefore,
  transition,
} from "../../lambdas/core/lifecycle/transition";
import type {
  Admission,
  AheadLedger,
  AheadLedgerEntry,
  AheadLedgerMove,
  JobFilter,
  JobStore,
  LaneRetirement,
  LeaseGrant,
  Page,
  RateLimiter,
  ReceivedRunMessage,
  ReceiveRequest,
  RepairCandidate,
  RetryPlan,
  RunMessage,
  RunOutcome,
  RunQueue,
  RunStore,
  SweepMessage,
  SweepQueue,
  TenantQuotas,
  WebhookSecret,
  WebhookSecretStore,
} from "../../lambdas/core/ports";
import { type Run, type RunSeed, RunStatus } from "../../lambdas/core/run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { triggerJob } from "../../lambdas/core/use-cases/manual-runs";
import { LOCAL_SETTINGS, type SchedulerSettings } from "../../lambdas/definitions/settings";

/**
 * In-memory ports with the same conditional semantics as the DynamoDB and SQS adapters, so the
 * core's use cases can be tested fast, with a fake clock and no emulator.
 */
type StoredJob = Job & { dueKey?: string };

export class MemoryJobStore implements JobStore {
  readonly jobs = new Map<string, StoredJob>();
  readonly cursors = new Map<number, number>();

  async createJob(job: Job) {
    if (this.jobs.has(job.jobId)) return "exists" as const;
    this.jobs.set(job.jobId, this.filed(job));
    return "created" as const;
  }

  async claimRunSlot(jobId: string, expected: number | undefined, runAt: number) {
    const current = this.jobs.get(jobId);
    if (!current || current.activeRunAt !== expected) return false;
    this.jobs.set(jobId, { ...current, activeRunAt: runAt, updatedAt: current.updatedAt + 1 });
    return true;
  }

  async replaceJob(job: Job, expectedUpdatedAt: number) {
    if (this.jobs.get(job.jobId)?.updatedAt !== expectedUpdatedAt) return false;
    this.jobs.set(job.jobId, this.filed(job));
    return true;
  }

  /** Calls to fileLabels (the memory store reads labels off the jobs themselves). */
  readonly labelFilings: Array<{
    jobId: string;
    labels: Readonly<Record<string, string>>;
    removed: readonly string[];
  }> = [];
  async fileLabels(job: Pick<Job, "jobId" | "labels">, removed: readonly string[]) {
    this.labelFilings.push({ jobId: job.jobId, labels: { ...job.labels }, removed });
  }

  async listJobs(tenant: string, filter: JobFilter, limit: number, cursor?: string) {
    const own = [...this.jobs.values()].filter((j) => j.tenant === tenant);
    const shown = filter.show ? await filter.show(own) : own;
    const all: JobSummary[] = shown
      .filter(
        (j) =>
          (filter.status === undefined || j.status === filter.status) &&
          (filter.type ?? j.type) === j.type &&
          (filter.labels ?? []).every(([key, value]) => j.labels?.[key] === value),
      )
      .sort((a, b) => b.createdAt - a.createdAt);
    const start = cursor === undefined ? 0 : Number(cursor);
    return {
      items: all.slice(start, start + limit),
      cursor: start + limit < all.length ? String(start + limit) : undefined,
    };
  }

  /** Like the DynamoDB adapter: only a job isFiledDue says so of is in the due index. */
  private filed(job: Job): StoredJob {
    const due = isFiledDue(job) ? job.nextRunAt : undefined;
    if (due === undefined && isFiledAhead(job) && job.madeAheadAt !== undefined) {
      return { ...job, dueKey: aheadKeyOf(bucketOf(job.madeAheadAt), groupOf(job.jobId)) };
    }
    return { ...job, dueKey: this.dueKey(job.jobId, due, job.updatedAt) };
  }

  async queryAhead(aheadKey: string, from: number, before: number) {
    const items = [...this.jobs.values()]
      .filter(
        (j) =>
          j.dueKey === aheadKey &&
          j.madeAheadAt !== undefined &&
          from <= j.madeAheadAt &&
          j.madeAheadAt < before,
      )
      .sort((a, b) => (a.madeAheadAt ?? 0) - (b.madeAheadAt ?? 0))
      .map((j) => ({ jobId: j.jobId, at: j.madeAheadAt as number }));
    return { items, cursor: undefined, readUnits: 0.5 };
  }

  readonly aheadCursors = new Map<number, number>();
  async getAheadCursor(group: number) {
    return this.aheadCursors.get(group);
  }

  /** The ahead ledger (decision 0059), as the DynamoDB item holds it. */
  readonly aheadLedger = new Map<number, AheadLedgerEntry>();
  async getAheadLedger(): Promise<AheadLedger> {
    return new Map(this.aheadLedger);
  }

  async moveAheadLedger(moves: readonly AheadLedgerMove[]) {
    const unchanged = moves.every(({ group, read }) => {
      const entry = this.aheadLedger.get(group);
      return (
        entry?.through === read?.through &&
        entry?.rewoundTo === read?.rewoundTo &&
        entry?.rewinds === read?.rewinds
      );
    });
    if (!unchanged) return false;
    for (const { group, through } of moves) {
      this.aheadLedger.set(group, { through, rewinds: this.aheadLedger.get(group)?.rewinds });
    }
    return true;
  }

  async rewindAheadLedger(group: number, from: number) {
    const entry = this.aheadLedger.get(group);
    const rewinds = (entry?.rewinds ?? 0) + 1;
    // Already rewound as far: only counted, as the DynamoDB store's second write does.
    const rewoundTo = entry?.rewoundTo !== undefined && entry.rewoundTo <= from ? entry.rewoundTo : from;
    this.aheadLedger.set(group, { through: entry?.through ?? from, rewoundTo, rewinds });
  }

  async getJobs(jobIds: readonly string[]) {
    const found = new Map<string, Job>();
    for (const id of jobIds) {
      const job = await this.getJob(id);
      if (job) found.set(id, job);
    }
    return found;
  }

  /** As stored: memory is always consistent, so `eventual` changes nothing here. */
  async getJob(jobId: string, _eventual?: boolean) {
    const stored = this.jobs.get(jobId);
    if (!stored) return undefined;
    const { dueKey: _, ...job } = stored;
    return job;
  }

  async queryDue(dueKey: string, before: number): Promise<Page<DueJob> & { readUnits: number }> {
    const items = [...this.jobs.values()]
      .filter((j) => j.dueKey === dueKey && j.nextRunAt !== undefined && j.nextRunAt < before)
      .sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0))
      .map((j) => ({ ...j, nextRunAt: j.nextRunAt as number }));
    return { items, cursor: undefined, readUnits: 0.5 };
  }

  async advanceJob(
    jobId: string,
    from: number,
    next: number | undefined,
    now: number,
    last?: number,
    made?: { readonly from: number; readonly through: number },
  ) {
    const job = this.jobs.get(jobId);
    if (!job || job.nextRunAt !== from || job.status !== "active") return false;
    const lastFiringAt = next === undefined && last !== undefined ? last : job.lastFiringAt;
    this.jobs.set(jobId, {
      ...job,
      nextRunAt: next,
      updatedAt: now,
      dueKey: this.dueKey(jobId, next, now),
      lastFiringAt,
      ...(made === undefined ? {} : { madeThrough: made.through, madeFrom: job.madeFrom ?? made.from }),
    });
    return true;
  }

  async closeCancelledJob(jobId: string, from: number) {
    const job = this.jobs.get(jobId);
    if (!job || job.nextRunAt !== from || job.status !== "cancelled") return false;
    this.jobs.set(jobId, { ...job, nextRunAt: undefined, dueKey: undefined });
    return true;
  }

  async completeJob(jobId: string, now: number, last?: number) {
    const job = this.jobs.get(jobId);
    if (job?.status !== "active" || job.nextRunAt !== undefined) return false;
    if (last !== undefined && job.lastFiringAt !== undefined && job.lastFiringAt !== last) return false;
    this.jobs.set(jobId, { ...job, status: "completed", updatedAt: now });
    return true;
  }

  async getSweepCursor(group: number) {
    return this.cursors.get(group);
  }

  async advanceSweepCursor(group: number, bucket: number) {
    if ((this.cursors.get(group) ?? Number.NEGATIVE_INFINITY) < bucket) this.cursors.set(group, bucket);
  }

  private dueKey(jobId: string, next: number | undefined, now: number) {
    return next === undefined ? undefined : dueKeyOf(bucketOf(Math.max(next, now)), shardOf(jobId));
  }
}

type StoredRun = RunRecord;

export class MemoryRunStore implements RunStore {
  readonly runs = new Map<string, StoredRun>();

  private key(jobId: string, scheduledFor: number) {
    return `${jobId}@${scheduledFor}`;
  }

  async createRun(run: Run) {
    const key = this.key(run.jobId, run.scheduledFor);
    if (this.runs.has(key)) return "exists" as const;
    this.runs.set(key, run);
    return "created" as const;
  }

  async getRun(jobId: string, scheduledFor: number) {
    const run = this.runs.get(this.key(jobId, scheduledFor));
    if (!run) return undefined;
    const { receiptHandle: _, ...plain } = run;
    return plain;
  }

  async listRunsBetween(jobId: string, from: number, to: number) {
    return [...this.runs.values()]
      .filter((r) => r.jobId === jobId && r.scheduledFor >= from && r.scheduledFor <= to)
      .sort((a, b) => a.scheduledFor - b.scheduledFor)
      .map((run) => this.plain(run));
  }

  async latestRunBefore(jobId: string, instant: number) {
    const before = [...this.runs.values()].filter((r) => r.jobId === jobId && r.scheduledFor < instant);
    const latest = before.sort((a, b) => b.scheduledFor - a.scheduledFor)[0];
    return latest && this.plain(latest);
  }

  async listRunsBefore(jobId: string, instant: number, limit: number) {
    return (await this.listRuns(jobId, Number.MAX_SAFE_INTEGER)).items
      .filter((run) => run.scheduledFor < instant)
      .slice(0, limit);
  }

  async listRecentRuns(jobId: string, limit: number) {
    return (await this.listRuns(jobId, limit)).items;
  }

  async listRuns(jobId: string, limit: number, cursor?: string) {
    const all = [...this.runs.values()]
      .filter((r) => r.jobId === jobId)
      .sort((a, b) => b.scheduledFor - a.scheduledFor)
      .map(({ receiptHandle: _, ...run }) => run);
    const start = cursor === undefined ? 0 : Number(cursor);
    return {
      items: all.slice(start, start + limit),
      cursor: start + limit < all.length ? String(start + limit) : undefined,
    };
  }

  /** Applies one lifecycle event to the stored run, as the DynamoDB store's conditional write does. */
  private apply(
    jobId: string,
    scheduledFor: number,
    event: RunEvent,
  ): { before: StoredRun; after: StoredRun } | undefined {
    const key = this.key(jobId, scheduledFor);
    const before = runBefore(this.runs.get(key), event);
    const after = transition(before, event);
    if (!before || !after) return undefined;
    this.runs.set(key, after);
    return { before, after };
  }

  /** Applies the event; the run as it now is, or undefined when the guard refused it. */
  private applied(jobId: string, scheduledFor: number, event: RunEvent): Run | undefined {
    const applied = this.apply(jobId, scheduledFor, event);
    return applied && this.plain(applied.after);
  }

  private plain(run: StoredRun): Run {
    const { receiptHandle: _, ...plain } = run;
    return plain;
  }

  async leaseRun(jobId: string, scheduledFor: number, grant: LeaseGrant) {
    return this.applied(jobId, scheduledFor, { kind: "lease", grant });
  }

  async finishRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    outcome: RunOutcome,
    tenants?: readonly string[],
  ) {
    const applied = this.apply(jobId, scheduledFor, { kind: "finish", fence, outcome, tenants });
    if (!applied) return undefined;
    const { wakes, tenant, type, receiptHandle, final } = applied.before;
    return {
      receiptHandle,
      final,
      tracked: applied.after.checkAt !== undefined,
      ...(wakes === undefined ? {} : { wakes: { scheduledFor: wakes, tenant, type } }),
    };
  }

  async loseRun(
    jobId: string,
    scheduledFor: number,
    loss: { readonly reason: string; readonly now: number; readonly final: boolean },
  ) {
    return this.applied(jobId, scheduledFor, { kind: "lose", ...loss });
  }

  async dropRetry(
    jobId: string,
    scheduledFor: number,
    drop: { readonly reason: string; readonly now: number; readonly final: boolean },
  ) {
    return this.applied(jobId, scheduledFor, { kind: "drop-retry", ...drop });
  }

  async setWake(jobId: string, scheduledFor: number, waiting: number, replacing?: number) {
    return this.apply(jobId, scheduledFor, { kind: "wake", waiting, replacing }) !== undefined;
  }

  async revokeRun(jobId: string, scheduledFor: number, reason: string, now: number) {
    return this.applied(jobId, scheduledFor, { kind: "revoke", reason, now });
  }

  async retryRun(jobId: string, scheduledFor: number, fence: number, plan: RetryPlan) {
    const applied = this.apply(jobId, scheduledFor, { kind: "retry", fence, plan });
    return applied && { receiptHandle: applied.before.receiptHandle };
  }

  async heartbeatRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    leaseExpiresAt: number,
    now: number,
  ) {
    const applied = this.apply(jobId, scheduledFor, { kind: "heartbeat", fence, leaseExpiresAt, now });
    return applied && { receiptHandle: applied.before.receiptHandle };
  }

  async returnLease(jobId: string, scheduledFor: number, fence: number, now: number) {
    return this.applied(jobId, scheduledFor, { kind: "return-lease", fence, now });
  }

  private deadLetters(tenant?: string) {
    return [...this.runs.values()]
      .filter((r) => r.status === RunStatus.DeadLettered && (tenant === undefined || r.tenant === tenant))
      .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0))
      .map(({ receiptHandle: _, ...run }) => run);
  }

  async listDeadLetters(tenant: string, limit: number, cursor?: string) {
    const all = this.deadLetters(tenant);
    const start = cursor === undefined ? 0 : Number(cursor);
    return {
      items: all.slice(start, start + limit),
      cursor: start + limit < all.length ? String(start + limit) : undefined,
    };
  }

  async countDeadLetters() {
    return this.deadLetters().length;
  }

  async replayRun(
    jobId: string,
    scheduledFor: number,
    replay: { by: string; now: number; checkAt: number; keepsAttempts?: boolean | undefined },
    from: "dead-lettered" | "missed" = "dead-lettered",
  ) {
    return this.applied(jobId, scheduledFor, { kind: "replay", from, ...replay });
  }

  async abandonRun(
    jobId: string,
    scheduledFor: number,
    status: "cancelled" | "missed" | "skipped",
    reason: string,
    now: number,
    final = false,
    seed?: RunSeed,
  ) {
    return this.applied(jobId, scheduledFor, { kind: "abandon", status, reason, now, final, seed });
  }

  async missRun(
    jobId: string,
    scheduledFor: number,
    miss: {
      readonly reason: string;
      readonly now: number;
      readonly final: boolean;
      readonly seed?: RunSeed | undefined;
    },
  ) {
    return this.applied(jobId, scheduledFor, { kind: "miss", ...miss });
  }

  async settleFinalRun(jobId: string, scheduledFor: number) {
    this.apply(jobId, scheduledFor, { kind: "settle" });
  }

  async markLastRun(jobId: string, scheduledFor: number) {
    return this.applied(jobId, scheduledFor, { kind: "mark-last" });
  }

  async trackFinalRun(jobId: string, scheduledFor: number, checkAt: number) {
    return this.apply(jobId, scheduledFor, { kind: "track", checkAt }) !== undefined;
  }

  async queryRepairCandidates(repairKey: string, before: number, limit: number, cursor?: string) {
    const all = [...this.runs.values()]
      .flatMap((r) => (r.checkAt === undefined ? [] : [{ ...r, checkAt: r.checkAt }]))
      .filter((r) => r.checkAt <= before && repairKeyOf(r.jobId) === repairKey)
      .sort((a, b) => a.checkAt - b.checkAt);
    const start = cursor === undefined ? 0 : Number(cursor);
    const items: RepairCandidate[] = all.slice(start, start + limit);
    return { items, cursor: start + limit < all.length ? String(start + limit) : undefined };
  }

  async scanUntracked(limit: number, cursor?: string) {
    const all = [...this.runs.values()].filter(
      (r) =>
        r.checkAt === undefined &&
        (r.status === RunStatus.Pending ||
          r.status === RunStatus.Leased ||
          (r.final && r.status !== RunStatus.Cancelled)),
    );
    const start = cursor === undefined ? 0 : Number(cursor);
    const items: Run[] = all.slice(start, start + limit);
    return { items, cursor: start + limit < all.length ? String(start + limit) : undefined };
  }

  async rescheduleCheck(run: RepairCandidate, expectedCheckAt: number, checkAt: number) {
    return (
      this.apply(run.jobId, run.scheduledFor, { kind: "recheck", expectedCheckAt, checkAt }) !== undefined
    );
  }
}

/** A queue that records what was sent and hands out what a test puts in `ready`. */
export class MemoryRunQueue implements RunQueue {
  readonly sent: Array<{ message: RunMessage; delaySeconds: number }> = [];
  readonly ready: ReceivedRunMessage[] = [];
  readonly deleted: string[] = [];
  readonly released: string[] = [];
  readonly extended: Array<{ receiptHandle: string; seconds: number }> = [];
  /** Calls to hide (each one batch of changes). */
  hides = 0;
  failSends = false;
  /** At most this many messages per receive, to mimic messages becoming visible one by one. */
  perReceive = Number.POSITIVE_INFINITY;
  receives = 0;
  /** The waitSeconds of every receive, in order. */
  readonly waits: number[] = [];
  /** Receipt handles whose extend fails, as SQS refuses a change past its limits. */
  readonly failExtends = new Set<string>();

  async send(messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>) {
    if (this.failSends) throw new Error("queue unavailable");
    this.sent.push(...messages);
  }

  /** Lanes the next retireIdleLanes deletes, as a test sets them; and every call's arguments. */
  idleLanes: Array<{ tenant: string; type: string }> = [];
  readonly retireCalls: Array<{ idleBefore: number; now: number; budgetMs: number }> = [];
  async retireIdleLanes(idleBefore: number, now: number, budgetMs: number): Promise<LaneRetirement> {
    this.retireCalls.push({ idleBefore, now, budgetMs });
    const retired = this.idleLanes;
    this.idleLanes = [];
    return { examined: retired.length, retired, kept: 0, errors: [], finished: true };
  }

  /** Messages waiting in a lane, as the test sets them (SQS's approximate count); 0 by default. */
  readonly backlogs = new Map<string, number>();
  laneBacklogFails = false;
  async laneBacklog(tenant: string, type: string) {
    if (this.laneBacklogFails) throw new Error("queue unavailable");
    return this.backlogs.get(`${tenant}\n${type}`) ?? 0;
  }

  /** Called when a long poll finds nothing: memoryDeps lets the fake clock run for the wait. */
  onEmptyWait: (seconds: number) => void = () => undefined;

  /** Hands out ready messages of the given types (as the lanes do), oldest first. */
  async receive({ types, tenants, max, waitSeconds }: ReceiveRequest) {
    this.receives += 1;
    this.waits.push(waitSeconds);
    const limit = Math.min(max, this.perReceive);
    const taken: ReceivedRunMessage[] = [];
    for (let i = 0; i < this.ready.length && taken.length < limit; ) {
      const item = this.ready[i];
      const inLane = (m: RunMessage) => types.includes(m.type) && tenants.includes(m.tenant);
      if (item && (!item.message || inLane(item.message))) {
        taken.push(item);
        this.ready.splice(i, 1);
      } else i += 1;
    }
    if (taken.length === 0 && waitSeconds > 0) this.onEmptyWait(waitSeconds);
    return taken;
  }

  async release(receiptHandle: string) {
    this.released.push(receiptHandle);
  }

  async hide(changes: ReadonlyArray<{ receiptHandle: string; seconds: number }>) {
    if (changes.length === 0) return []; // as SQS: no entries, no request
    this.hides += 1;
    const failed: string[] = [];
    for (const { receiptHandle, seconds } of changes) {
      // A change that fails is dropped and reported, as the port says.
      if (seconds === 0) await this.release(receiptHandle);
      else await this.extend(receiptHandle, seconds).catch(() => failed.push(receiptHandle));
    }
    return failed;
  }

  async extend(receiptHandle: string, seconds: number) {
    if (this.failExtends.has(receiptHandle))
      throw new Error("InvalidParameterValue: visibility beyond the limit");
    this.extended.push({ receiptHandle, seconds });
  }

  async delete(receiptHandle: string) {
    this.deleted.push(receiptHandle);
  }

  /** Calls to deleteBatch. */
  deleteBatches = 0;

  async deleteBatch(receiptHandles: readonly string[]) {
    if (receiptHandles.length === 0) return [];
    this.deleteBatches += 1;
    this.deleted.push(...receiptHandles);
    return [];
  }

  private deliveries = 0;

  /**
   * Makes everything sent so far receivable, each with a receipt handle of its own (as SQS
   * gives each receive: a lease knows its own repeat by it, decision 0053).
   */
  deliverAll() {
    for (const { message } of this.sent.splice(0)) {
      this.deliveries += 1;
      this.ready.push({ message, receiptHandle: `rh-${message.runId}-${this.deliveries}` });
    }
  }
}

/**
 * The tenant quotas with the rules of the DynamoDB adapter, counted in memory: active jobs
 * counted up per create (never down: `recount` stands in for the adapter's recount, reading
 * the memory job store), creates per second, and the set of types.
 */
export class MemoryTenantQuotas implements TenantQuotas {
  readonly active = new Map<string, number>();
  readonly types = new Map<string, Set<string>>();
  private readonly window = new Map<string, { second: number; creates: number }>();

  constructor(
    private readonly limits: () => Pick<
      SchedulerSettings,
      "tenantCreatesPerSecond" | "tenantMaxActiveJobs" | "tenantMaxJobTypes"
    >,
    private readonly jobs: MemoryJobStore,
  ) {}

  async admitType(tenant: string, type: string): Promise<Admission> {
    const maxTypes = this.limits().tenantMaxJobTypes;
    const types = this.types.get(tenant) ?? new Set<string>();
    if (maxTypes > 0 && !types.has(type) && types.size >= maxTypes) {
      return { admitted: false, quota: "job-types", limit: maxTypes, retryAfterSeconds: 3_600 };
    }
    types.add(type);
    this.types.set(tenant, types);
    return { admitted: true };
  }

  async admitCreate(tenant: string, type: string, clock: Pick<Clock, "now">): Promise<Admission> {
    const now = clock.now();
    const {
      tenantCreatesPerSecond: rate,
      tenantMaxActiveJobs: max,
      tenantMaxJobTypes: maxTypes,
    } = this.limits();
    const types = this.types.get(tenant) ?? new Set<string>();
    if (maxTypes > 0 && !types.has(type) && types.size >= maxTypes) {
      return { admitted: false, quota: "job-types", limit: maxTypes, retryAfterSeconds: 3_600 };
    }
    const second = Math.floor(now / 1000);
    const window = this.window.get(tenant);
    const creates = window?.second === second ? window.creates : 0;
    if (rate > 0 && creates >= rate) {
      return { admitted: false, quota: "creates-per-second", limit: rate, retryAfterSeconds: 1 };
    }
    if (max > 0 && (this.active.get(tenant) ?? 0) >= max) {
      this.recount(tenant);
      if ((this.active.get(tenant) ?? 0) >= max) {
        return { admitted: false, quota: "active-jobs", limit: max, retryAfterSeconds: 60 };
      }
    }
    types.add(type);
    this.types.set(tenant, types);
    this.window.set(tenant, { second, creates: creates + 1 });
    this.active.set(tenant, (this.active.get(tenant) ?? 0) + 1);
    return { admitted: true };
  }

  async releaseCreate(tenant: string) {
    this.active.set(tenant, Math.max(0, (this.active.get(tenant) ?? 0) - 1));
  }

  async releaseType(tenant: string, type: string) {
    const inUse = [...this.jobs.jobs.values()].some(
      (j) => j.tenant === tenant && j.type === type && (j.status === "active" || j.status === "paused"),
    );
    if (inUse || this.limits().tenantMaxJobTypes <= 0) return false;
    this.types.get(tenant)?.delete(type);
    return true;
  }

  private recount(tenant: string) {
    const live = [...this.jobs.jobs.values()].filter(
      (j) => j.tenant === tenant && (j.status === "active" || j.status === "paused"),
    );
    this.active.set(tenant, live.length);
  }
}

/** A per-second counter per tenant, as the DynamoDB limiter keeps. */
export class MemoryWebhookSecretStore implements WebhookSecretStore {
  readonly secrets = new Map<string, WebhookSecret>();

  async get(tenant: string) {
    return this.secrets.get(tenant);
  }

  async put(tenant: string, secret: WebhookSecret, expected: string | undefined) {
    if (this.secrets.get(tenant)?.current !== expected) return false;
    this.secrets.set(tenant, secret);
    return true;
  }
}

export class MemoryRateLimiter implements RateLimiter {
  constructor(private readonly perSecond: () => number) {}
  readonly used = new Map<string, number>();

  async take(tenant: string, count: number, now: number) {
    const key = `${tenant}@${Math.floor(now / 1000)}`;
    const before = this.used.get(key) ?? 0;
    this.used.set(key, before + count);
    return Math.max(0, Math.min(count, this.perSecond() - before));
  }
}

/** Records the groups a tick fanned out, and keeps its messages until a sweep takes them. */
export class MemorySweepQueue implements SweepQueue {
  readonly dispatched: number[][] = [];
  /** Messages sent and not yet taken (takeAll), oldest first. */
  pending: SweepMessage[] = [];

  async dispatch(messages: readonly SweepMessage[]) {
    this.dispatched.push(messages.map((m) => m.group));
    this.pending.push(...messages);
  }

  /** The messages waiting, handed over and forgotten here. */
  takeAll(): SweepMessage[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }
}

export interface MemoryDeps extends SchedulerDeps {
  readonly jobs: MemoryJobStore;
  readonly quotas: MemoryTenantQuotas;
  readonly runs: MemoryRunStore;
  readonly queue: MemoryRunQueue;
  readonly sweeps: MemorySweepQueue;
  readonly clock: FixedClock;
  readonly warnings: string[];
  readonly randomBytes: (size: number) => Uint8Array;
}

export function memoryDeps(now: number, settings: Partial<SchedulerSettings> = {}): MemoryDeps {
  const warnings: string[] = [];
  let seed = 1;
  // The fake clock stands still: every create would fall in one second, so no create rate unless asked.
  const merged = { ...LOCAL_SETTINGS, tenantCreatesPerSecond: 0, ...settings };
  const clock = new FixedClock(now);
  const queue = new MemoryRunQueue();
  const jobs = new MemoryJobStore();
  queue.onEmptyWait = (seconds) => clock.advance(seconds * 1000);
  return {
    jobs,
    runs: new MemoryRunStore(),
    queue,
    sweeps: new MemorySweepQueue(),
    clock,
    settings: merged,
    rateLimiter: new MemoryRateLimiter(() => merged.tenantRunsPerSecond),
    quotas: new MemoryTenantQuotas(() => merged, jobs),
    webhookSecrets: new MemoryWebhookSecretStore(),
    // Jitter in the middle of its range, so backoff tests know the delay.
    random: () => 0.5,
    log: {
      info: () => undefined,
      warn: (message) => warnings.push(message),
      error: (message) => warnings.push(message),
    },
    warnings,
    // A seeded Lehmer generator: ids differ from each other but every run makes the same ones.
    randomBytes: (size) =>
      Uint8Array.from({ length: size }, () => {
        seed = (seed * 48271) % 2147483647;
        return seed & 255;
      }),
  };
}

/**
 * A run the repair pass watches (decision 0045: a firing's run is carried by its message, not
 * the index): a manual run of a one-off job due tomorrow, sent and delivered. Returns its job id.
 */
export async function watchedRun(deps: MemoryDeps, caller: Caller, type = "x"): Promise<string> {
  const { jobId } = await createJob(deps, caller, {
    type,
    runAt: new Date(deps.clock.now() + 86_400_000).toISOString(),
  });
  await triggerJob(deps, caller, jobId, {});
  deps.queue.deliverAll();
  return jobId;
}

/**
 * A one-off job of type "x" due now (on the fake clock), created through the API's use case
 * by `caller`, its run fired and delivered to the memory queue. Returns the job id.
 */
export async function dueRun(
  deps: MemoryDeps,
  extra: Record<string, unknown>,
  caller: Caller,
): Promise<string> {
  const { jobId } = await createJob(deps, caller, {
    type: "x",
    runAt: new Date(deps.clock.now()).toISOString(),
    ...extra,
  });
  deps.queue.deliverAll();
  return jobId;
}
