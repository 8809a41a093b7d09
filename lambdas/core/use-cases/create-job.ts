import { createHash } from "node:crypto";
import { type CreateJobRequest, createJobRequest } from "@jobsched/contract";
import stringify from "safe-stable-stringify";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { ConflictError, IdempotencyConflictError, QuotaExceededError, ValidationError } from "../errors";
import { jobIdForIdempotencyKey, newJobId, type RandomBytes } from "../ids";
import { formatInstant } from "../instant";
import { type DueJob, type Job, JobStatus } from "../job";
import { definitionFromRequest } from "../job-definition";
import type { Admission } from "../ports";
import { requireFutureRun } from "../schedule/schedule-input";
import { pushTypeOf } from "../target";
import { parseWith } from "../validation";
import { nextRunViewed } from "../views";
import { fireJobs } from "./fire-jobs";
import {
  firingMadeAhead,
  firingMadeAtCreate,
  makeRunAtCreate,
  movedAheadAtCreate,
  movedOnAtCreate,
} from "./one-off-with-run";
import { aheadSentThroughOf } from "./sweep-ahead";

/** A one-off job may name a time this far in the past (clock skew, slow clients) and still run. */
export const MAX_PAST_RUN_AT_MS = 5 * 60_000;

export interface CreateJobResult {
  /** 201 for a new job, 200 when an idempotent retry found the original. */
  readonly created: boolean;
  readonly jobId: string;
  readonly nextRunAt: string | undefined;
}

/**
 * Validates and stores a job. The answer comes only after DynamoDB has the job, so an
 * accepted job is never lost. The tenant's quotas are counted first; a refusal is a 429 with
 * Retry-After, and writes no job. A job due before the next sweep could see it is fired here, so
 * "run in 5 seconds" runs in 5 seconds; if that fails the sweep still finds it in the index. A
 * one-off due within 15 minutes has its run made and sent before the job is stored, and never
 * enters the index (decision 0048).
 */
export async function createJob(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
  body: unknown,
): Promise<CreateJobResult> {
  const request = parseWith(createJobRequest, body);
  const now = deps.clock.now();
  const job = buildJob(deps, caller, request, now);
  await requireWebhookSecret(deps, job);

  // Counted by the clock as it is when counted, not at the request's start: the parse, the
  // webhook secret's read and another create's count can take a second's turn, and a create
  // counted in the second before would be judged by a window that has closed.
  const admission = await deps.quotas.admitCreate(job.tenant, job.type, deps.clock);
  if (!admission.admitted) {
    // A retry of a create that was stored before still gets its answer.
    if (job.idempotencyKey !== undefined && (await deps.jobs.getJob(job.jobId))) return repeated(deps, job);
    throw quotaError(admission);
  }
  const madeAt = job.status === JobStatus.Active ? firingMadeAtCreate(deps, job, now) : undefined;
  if (madeAt !== undefined) {
    // A retry of a keyed create that was stored makes nothing: it gets the stored job's answer.
    if (job.idempotencyKey !== undefined && (await deps.jobs.getJob(job.jobId)))
      return foundStored(deps, job);
    return createWithRun(deps, job, madeAt, now);
  }
  // "exists" for a keyless job (its id is new) is this request's own put, retried by the SDK
  // after its answer was lost: the create stands. A keyed one is answered as a repeat.
  // A one-off due well ahead is stored made (decision 0058): the sweep that reaches its firing
  // sends its run without writing the job.
  const aheadAt = job.status === JobStatus.Active ? firingMadeAhead(deps, job, now) : undefined;
  const stored = aheadAt === undefined ? job : movedAheadAtCreate(job, aheadAt);
  if ((await deps.jobs.createJob(stored)) === "exists" && job.idempotencyKey !== undefined)
    return foundStored(deps, job);

  const active = job.status === JobStatus.Active;
  if (active && job.nextRunAt !== undefined && job.nextRunAt < now + deps.settings.lookaheadSeconds * 1000) {
    await fireNearTerm(deps, { ...job, nextRunAt: job.nextRunAt });
  }
  return { created: true, jobId: job.jobId, nextRunAt: nextInstantOf(job) };
}

/**
 * A one-off due within SQS's longest delay: its run made and sent first, then the job stored
 * already moved past it (decisions 0048, 0052): three write units less than the due index's
 * way (its entry put and removed, the sweep's advance).
 */
async function createWithRun(
  deps: SchedulerDeps,
  job: Job,
  at: number,
  now: number,
): Promise<CreateJobResult> {
  try {
    await makeRunAtCreate(deps, job, at, now);
  } catch (error) {
    // No job is stored: the count taken for it is given back (a create killed here leaves it
    // counted, on the strict side, until the next recount).
    await deps.quotas.releaseCreate(job.tenant).catch(() => undefined);
    throw error;
  }
  if (
    (await deps.jobs.createJob(movedOnAtCreate(job, at))) === "exists" &&
    job.idempotencyKey !== undefined
  ) {
    // A keyed create that lost a race with another of its key: the run made here is a copy of
    // that job's own (same request) or never runs (another request's: decision 0052). Keyless,
    // "exists" is this request's own put retried by the SDK: the create stands.
    return foundStored(deps, job);
  }
  return { created: true, jobId: job.jobId, nextRunAt: formatInstant(at) };
}

/** A create that found its idempotency key's job stored: its quota count given back, that job's answer. */
async function foundStored(deps: SchedulerDeps, job: Job): Promise<CreateJobResult> {
  await deps.quotas.releaseCreate(job.tenant);
  return repeated(deps, job);
}

/** The answer to a create whose idempotency key's job is stored: that job, if the request matches. */
async function repeated(deps: SchedulerDeps, job: Job): Promise<CreateJobResult> {
  const original = await deps.jobs.getJob(job.jobId);
  if (original?.requestHash !== job.requestHash) {
    throw new IdempotencyConflictError(
      "idempotencyKey: already used for a different request; use a new key to create another job",
      "idempotencyKey",
    );
  }
  const shown =
    original &&
    nextRunViewed(original, deps.clock.now(), (await aheadSentThroughOf(deps, [original]))(original.jobId));
  return {
    created: false,
    jobId: job.jobId,
    nextRunAt: shown === undefined ? undefined : formatInstant(shown),
  };
}

function quotaError(refusal: Extract<Admission, { admitted: false }>): QuotaExceededError {
  switch (refusal.quota) {
    case "creates-per-second":
      return new QuotaExceededError(
        `quota: at most ${refusal.limit} jobs created a second per tenant; slow down and retry`,
        "quota.createsPerSecond",
        refusal.retryAfterSeconds,
      );
    case "active-jobs":
      return new QuotaExceededError(
        `quota: at most ${refusal.limit} active or paused jobs per tenant; cancel some, or let them finish`,
        "quota.activeJobs",
        refusal.retryAfterSeconds,
      );
    case "job-types":
      return new QuotaExceededError(
        `type: at most ${refusal.limit} job types per tenant; reuse a type you have`,
        "type",
        refusal.retryAfterSeconds,
      );
  }
}

function buildJob(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
  request: CreateJobRequest,
  now: number,
): Job {
  const jobId =
    request.idempotencyKey === undefined
      ? newJobId(deps.randomBytes)
      : jobIdForIdempotencyKey(caller.tenant, request.idempotencyKey);
  const definition = definitionFromRequest(deps.settings, request, request.importedFrom ?? jobId, {
    tenant: caller.tenant,
    tenantAccounts: deps.tenantAccounts,
  });
  const nextRunAt = requireFutureRun(definition.schedule, now);
  if (definition.schedule.kind === "once" && definition.schedule.runAt < now - MAX_PAST_RUN_AT_MS) {
    throw new ValidationError("runAt: more than 5 minutes in the past", "runAt");
  }

  const requestHash = createHash("sha256")
    .update(String(stringify({ ...request, tenant: caller.tenant })))
    .digest("base64url");
  return {
    jobId,
    tenant: caller.tenant,
    type: typeOf(request),
    ...definition,
    // Created paused: out of the due index until resumed, as a pause leaves it.
    status: request.paused ? JobStatus.Paused : JobStatus.Active,
    nextRunAt,
    idempotencyKey: request.idempotencyKey,
    ...(request.importedFrom === undefined ? {} : { importedFrom: request.importedFrom }),
    requestHash,
    createdAt: now,
    createdBy: caller.principal,
    updatedAt: now,
    version: 1,
    audit: [
      { action: "created", by: caller.principal, at: now },
      ...(request.paused
        ? [
            {
              action: "paused" as const,
              by: caller.principal,
              at: now,
              ...(request.paused.reason === undefined ? {} : { reason: request.paused.reason }),
            },
          ]
        : []),
    ],
  };
}

/**
 * A worker job's type is the caller's; a push job's is its target's kind (`@https`...), which
 * no worker can ask for, so its runs go to the dispatcher alone.
 */
function typeOf(request: CreateJobRequest): string {
  if (request.target !== undefined) {
    if (request.type !== undefined) {
      throw new ValidationError(
        `type: leave it out for a job with a target (its runs are pushed, not leased; its type is ${pushTypeOf(request.target)})`,
        "type",
      );
    }
    return pushTypeOf(request.target);
  }
  if (request.type === undefined) {
    throw new ValidationError(
      "type: required (the worker type that runs the job), unless a target is given",
      "type",
    );
  }
  return request.type;
}

/** An https target's deliveries are signed with the tenant's webhook secret: it must exist first. */
export async function requireWebhookSecret(deps: SchedulerDeps, job: Pick<Job, "tenant" | "target">) {
  if (job.target?.kind !== "https") return;
  if (!(await deps.webhookSecrets.get(job.tenant))) {
    throw new ConflictError(
      "target: an https target's deliveries are signed with your webhook secret; create it first (POST /api/v1/webhook-secret, or jobsched webhook-secret rotate)",
      "target",
    );
  }
}

function nextInstantOf(job: Job): string | undefined {
  return job.nextRunAt === undefined ? undefined : formatInstant(job.nextRunAt);
}

/** Fires a job due before the next sweep; on failure the sweep picks it up from the index. */
export async function fireNearTerm(deps: SchedulerDeps, job: DueJob): Promise<void> {
  try {
    await fireJobs(deps, [job]);
  } catch (error) {
    deps.log.warn("near-term fire failed; the sweep will pick the job up", {
      jobId: job.jobId,
      error: String(error),
    });
  }
}
