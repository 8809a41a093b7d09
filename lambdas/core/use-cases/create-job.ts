import { createHash } from "node:crypto";
import stringify from "safe-stable-stringify";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { IdempotencyConflictError, ValidationError } from "../errors";
import { jobIdForIdempotencyKey, newJobId, type RandomBytes } from "../ids";
import { formatInstant } from "../instant";
import { type DueJob, type Job, JobStatus } from "../job";
import { firstRunAt } from "../schedule/schedule";
import { scheduleFromFields } from "../schedule/schedule-input";
import { createJobRequest } from "../schemas";
import { parseWith } from "../validation";
import { fireJobs } from "./fire-jobs";

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
 * accepted job is never lost. A job due before the next sweep could see it is fired here, so
 * "run in 5 seconds" runs in 5 seconds; if that fails the sweep still finds it in the index.
 */
export async function createJob(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
  body: unknown,
): Promise<CreateJobResult> {
  const request = parseWith(createJobRequest, body);
  const now = deps.clock.now();
  const schedule = scheduleFromFields({ runAt: request.runAt });
  const nextRunAt = firstRunAt(schedule, now);
  if (nextRunAt !== undefined && nextRunAt < now - MAX_PAST_RUN_AT_MS) {
    throw new ValidationError("runAt: more than 5 minutes in the past", "runAt");
  }
  const requestHash = createHash("sha256")
    .update(String(stringify({ ...request, tenant: caller.tenant })))
    .digest("base64url");
  const jobId =
    request.idempotencyKey === undefined
      ? newJobId(deps.randomBytes)
      : jobIdForIdempotencyKey(caller.tenant, request.idempotencyKey);

  const job: Job = {
    jobId,
    tenant: caller.tenant,
    type: request.type,
    payload: request.payload ?? null,
    schedule,
    status: JobStatus.Active,
    nextRunAt,
    maxAttempts: request.maxAttempts,
    idempotencyKey: request.idempotencyKey,
    requestHash,
    createdAt: now,
    createdBy: caller.principal,
    updatedAt: now,
  };

  if ((await deps.jobs.createJob(job)) === "exists") {
    const original = await deps.jobs.getJob(jobId);
    if (original?.requestHash !== requestHash) {
      throw new IdempotencyConflictError(
        "idempotencyKey: already used for a different request; use a new key to create another job",
      );
    }
    return { created: false, jobId, nextRunAt: nextInstantOf(original) };
  }

  if (nextRunAt !== undefined && nextRunAt < now + deps.settings.lookaheadSeconds * 1000) {
    await fireNearTerm(deps, { ...job, nextRunAt });
  }
  return { created: true, jobId, nextRunAt: nextInstantOf(job) };
}

function nextInstantOf(job: Job): string | undefined {
  return job.nextRunAt === undefined ? undefined : formatInstant(job.nextRunAt);
}

async function fireNearTerm(deps: SchedulerDeps, job: DueJob): Promise<void> {
  try {
    await fireJobs(deps, [job]);
  } catch (error) {
    // The job is stored and in the due index: the next sweep fires it. Only timeliness suffers.
    deps.log.warn("near-term fire failed; the sweep will pick the job up", { jobId: job.jobId, error });
  }
}
