import { FixedClock } from "../../lambdas/core/clock";
import { requestTagOf } from "../../lambdas/core/delivery";
import type { SchedulerDeps } from "../../lambdas/core/deps";
import { DomainError } from "../../lambdas/core/errors";
import { type Job, JobStatus } from "../../lambdas/core/job";
import { groupsOfTurn, SHARDS_PER_GROUP, shardOf, turnAt } from "../../lambdas/core/keys";
import { seededRun } from "../../lambdas/core/lifecycle/creation";
import { runsKeptSince } from "../../lambdas/core/made-runs";
import { shownJob } from "../../lambdas/core/one-off-end";
import type { JobStore, RunStore, SweepMessage } from "../../lambdas/core/ports";
import { type Run, RunStatus } from "../../lambdas/core/run";
import type { Lease } from "../../lambdas/core/use-cases/lease-runs";
import { CLOUD_SETTINGS, LOCAL_SETTINGS, type SchedulerSettings } from "../../lambdas/definitions/settings";
import {
  MemoryJobStore,
  MemoryRateLimiter,
  MemoryRunStore,
  MemorySweepQueue,
  MemoryTenantQuotas,
  MemoryWebhookSecretStore,
} from "../support/memory-ports";
import { Crash, CrashSwitch, Refusal } from "./crash-switch";
import { SimRunQueue } from "./sim-queue";

/** The model's one tenant, its caller and its worker, and the one job type its workers serve. */
export const TENANT = "t-model";
export const CALLER = { tenant: TENANT, principal: "arn:aws:iam::111111111111:role/model" };
export const WORKER = { principal: "arn:aws:iam::111111111111:role/worker", tenants: [TENANT] };
export const TYPE = "m";
export const START = Date.UTC(2026, 11, 2, 9, 0, 0);

/** A lease a model worker holds (or held: it may go silent, or be outlived by a newer fence). */
export interface HeldLease {
  readonly lease: Lease;
  readonly jobId: string;
  readonly scheduledFor: number;
}

/** A job the model created, with what it expects of it. */
export interface ModelJob {
  readonly jobId: string;
  /** A one-off, or a recurring job with an end: it must complete once workers stop failing. */
  bounded: boolean;
  /**
   * Under skip, buffer-one or cancel-previous: the leases (run id to fence) granted before the
   * job got that policy (none for one created with it); undefined under allow. Check (c) counts
   * only the other live leases: runs leased under an earlier policy may overlap by design.
   */
  leasedBeforePolicy: ReadonlyMap<string, number> | undefined;
  /** The checks saw the job completed (check (g) judges the step that completed it). */
  completed?: boolean;
}

/** Where the run and job records live: memory, or the DynamoDB adapters on dynalite. */
export interface Stores {
  readonly jobs: JobStore;
  readonly runs: RunStore;
  /** Every run of the job, read without the crash switch (the checks' view). */
  runsOf(jobId: string): Promise<Run[]>;
}

export function memoryStores(): Stores {
  const jobs = new MemoryJobStore();
  const runs = new MemoryRunStore();
  return {
    jobs,
    runs,
    runsOf: async (jobId) => [...runs.runs.values()].filter((r) => r.jobId === jobId),
  };
}

/** A property the checks found broken: what, and the state that shows it. */
export class Violation extends Error {}

/** The scheduler's timing in the model: the local runtime's, or the cloud's (decision 0056). */
export type ModelTiming = "local" | "cloud";
const TIMINGS: Record<ModelTiming, SchedulerSettings> = {
  local: LOCAL_SETTINGS,
  cloud: {
    ...LOCAL_SETTINGS,
    tickSeconds: CLOUD_SETTINGS.tickSeconds,
    sweepEveryTicks: CLOUD_SETTINGS.sweepEveryTicks,
    lookaheadSeconds: CLOUD_SETTINGS.lookaheadSeconds,
  },
};

/**
 * The system under test, driven by the model's commands: the real use cases on the given
 * stores, a queue with SQS's timing on a fake clock, and a switch that kills a step between
 * two of its calls. It also keeps the reference record the checks compare against: the jobs
 * created, the leases granted (with the fences issued), and a log of the steps for a readable
 * counterexample.
 */
export class World {
  readonly clock = new FixedClock(START);
  readonly queue = new SimRunQueue(this.clock);
  readonly crash = new CrashSwitch();
  readonly deps: SchedulerDeps & { readonly randomBytes: (size: number) => Uint8Array };
  readonly jobs: ModelJob[] = [];
  readonly held: HeldLease[] = [];
  /** Create bodies with an idempotency key whose create crashed: a client retries them. */
  readonly unanswered: Record<string, unknown>[] = [];
  /** Idempotency keys handed out in this sequence (each keyed create's own). */
  keysIssued = 0;
  readonly log: string[] = [];
  /** The highest fence the system handed out per run (runId). */
  readonly fencesIssued = new Map<string, number>();
  /**
   * Runs (runId) leased since an operator last replayed them: under at-most-once, a second lease
   * of one is a second execution, whatever its attempt says (another replay resets attempt too).
   */
  readonly leasedSinceReplay = new Set<string>();
  /** The tick's fan-out: messages waiting for the sweeper (SQS's sweep queue). */
  readonly sweeps = new MemorySweepQueue();
  /** Sweep messages already swept, the latest last: SQS may deliver one again. */
  readonly swept: SweepMessage[] = [];
  private seed = 1;

  constructor(
    readonly stores: Stores,
    timing: ModelTiming = "local",
  ) {
    const settings: SchedulerSettings = { ...TIMINGS[timing], tenantCreatesPerSecond: 0 };
    const jobs = new MemoryJobStore();
    this.deps = {
      jobs: this.crash.wrap(stores.jobs),
      runs: this.crash.wrap(stores.runs),
      queue: this.crash.wrap(this.queue),
      sweeps: this.crash.wrap(this.sweeps),
      clock: this.clock,
      settings,
      rateLimiter: new MemoryRateLimiter(() => 0),
      quotas: new MemoryTenantQuotas(
        () => ({ ...settings, tenantMaxActiveJobs: 0, tenantMaxJobTypes: 0 }),
        jobs,
      ),
      webhookSecrets: new MemoryWebhookSecretStore(),
      random: () => 0.5,
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
      // Seeded (Lehmer): every run of a sequence makes the same ids, so a failure replays.
      randomBytes: (size) =>
        Uint8Array.from({ length: size }, () => {
          this.seed = (this.seed * 48271) % 2147483647;
          return this.seed & 255;
        }),
    };
  }

  note(line: string): void {
    this.log.push(`t+${Math.round((this.clock.now() - START) / 1000)}s ${line}`);
  }

  /**
   * Runs one step as a request or an invocation would: a domain error is an answer (4xx), an
   * injected crash kills the step where it stands; anything else is a bug and fails the test.
   */
  async step<T>(name: string, action: () => Promise<T>): Promise<T | undefined> {
    try {
      return await action();
    } catch (error) {
      if (error instanceof Crash) {
        this.note(`${name}: crashed after ${this.crash.calls - 1} call(s)`);
        return undefined;
      }
      // A refused call the step did not handle: its request or invocation failed (a 5xx, SQS's
      // retry of a message), nothing more.
      if (error instanceof Refusal) {
        this.note(`${name}: failed on a refused call`);
        return undefined;
      }
      if (error instanceof DomainError) {
        this.note(`${name}: ${error.code}`);
        return undefined;
      }
      throw error;
    }
  }

  job(index: number): ModelJob | undefined {
    return this.jobs.length === 0 ? undefined : this.jobs[index % this.jobs.length];
  }

  lease(index: number): HeldLease | undefined {
    return this.held.length === 0 ? undefined : this.held[index % this.held.length];
  }

  /** The sweep groups that hold the model's jobs (the others are empty). */
  sweepGroups(): number[] {
    return [...new Set(this.jobs.map((j) => Math.floor(shardOf(j.jobId) / SHARDS_PER_GROUP)))];
  }

  /** Of those, the ones a tick now sweeps (every group, or in turns: decision 0056). */
  sweepGroupsOfTick(): number[] {
    const { tickSeconds, sweepEveryTicks } = this.deps.settings;
    // The model's ticks come on the minute, so the clock's turn is the one the rules name.
    const turn = new Set(
      groupsOfTurn(turnAt(this.clock.now(), tickSeconds, sweepEveryTicks), sweepEveryTicks),
    );
    return this.sweepGroups().filter((g) => turn.has(g));
  }

  /** The job as the API shows it: a one-off its run ended is completed (decision 0057). */
  async shownJob(jobId: string): Promise<Job | undefined> {
    const job = await this.storedJob(jobId);
    if (!job) return undefined;
    return shownJob(
      job,
      (await this.runsOf(jobId)).find((r) => r.scheduledFor === job.lastFiringAt),
      runsKeptSince(this.deps.settings, this.clock.now()),
    );
  }

  async storedJob(jobId: string): Promise<Job | undefined> {
    return this.stores.jobs.getJob(jobId);
  }

  async allRuns(): Promise<Run[]> {
    return (await Promise.all(this.jobs.map((j) => this.runsOf(j.jobId)))).flat();
  }

  /**
   * Every run of the job, as the checks see them: the stored ones, and each run made but not
   * written (decision 0051) as the pending run its seed stands for, until one is written.
   */
  async runsOf(jobId: string): Promise<Run[]> {
    const stored = await this.stores.runsOf(jobId);
    const job = await this.stores.jobs.getJob(jobId);
    const written = new Set(stored.map((r) => r.scheduledFor));
    const made = [...this.queue.made.values()].filter(
      (seed) =>
        seed.jobId === jobId &&
        !written.has(seed.scheduledFor) &&
        (!job || this.madeByJob(job, seed.scheduledFor)),
    );
    return [...stored, ...made.map(seededRun)];
  }

  /**
   * Whether a made run's messages include one of the job's own (decision 0052): made by a
   * sweep or a keyless create (no tag), or by the request that stored the job.
   */
  madeByJob(job: Job, at: number): boolean {
    const tags = this.queue.madeBy.get(`${job.jobId}@${at}`);
    return tags === undefined || tags.has(undefined) || tags.has(requestTagOf(job));
  }

  describeRun(run: Run): string {
    return `${run.jobId.slice(-6)}@${new Date(run.scheduledFor).toISOString().slice(11, 23)} ${run.status} a${run.attempt} f${run.fence}${run.origin ? ` ${run.origin}` : ""}${run.error ? ` (${run.error})` : ""}`;
  }

  fail(message: string): never {
    throw new Violation(`${message}\n  steps:\n    ${this.log.join("\n    ")}`);
  }
}

export const UNFINISHED: readonly string[] = [RunStatus.Pending, RunStatus.Leased];

export function isUnfinished(run: Run): boolean {
  return UNFINISHED.includes(run.status);
}

export function isLive(job: Job | undefined): boolean {
  return job?.status === JobStatus.Active;
}
