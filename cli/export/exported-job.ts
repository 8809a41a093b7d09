import type { JobResponse } from "@jobsched/contract";

/**
 * One line of `jobsched export`: a job as the API shows it, and the create body that makes the
 * same job again (`jobsched import jobs` sends it through bulk create). Kept flat and
 * self-describing, so a line can be read, filtered and edited with ordinary JSON tools.
 */
export interface ExportedJob {
  /** The format of the line; an import refuses a version it does not know. */
  readonly exportVersion: 1;
  readonly jobId: string;
  readonly status: JobResponse["status"];
  readonly pauseReason?: string;
  /** When the job runs next in the deployment it came from (absent: nothing is due). */
  readonly nextRunAt?: string;
  readonly createdAt: string;
  /** The create body (POST /api/v1/jobs) of the same definition, labels included. */
  readonly job: Record<string, unknown>;
}

export function exportedJob(job: JobResponse): ExportedJob {
  return {
    exportVersion: 1,
    jobId: job.jobId,
    status: job.status,
    ...(job.pauseReason === undefined ? {} : { pauseReason: job.pauseReason }),
    ...(job.nextRunAt === undefined ? {} : { nextRunAt: job.nextRunAt }),
    createdAt: job.createdAt,
    job: createBodyOf(job),
  };
}

/** The create body of a job's definition: every field the API would otherwise default is spelled out. */
function createBodyOf(job: JobResponse): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (job.target) body.target = { ...job.target };
  else body.type = job.type;
  body.payload = job.payload;
  if (job.idempotencyKey !== undefined) body.idempotencyKey = job.idempotencyKey;
  const schedule = [
    "runAt",
    "cron",
    "timeZone",
    "dstPolicy",
    "interval",
    "jitter",
    "startAt",
    "endAt",
  ] as const satisfies ReadonlyArray<keyof JobResponse>;
  for (const field of schedule) if (job[field] !== undefined) body[field] = job[field];
  body.missedRuns = job.missedRuns;
  body.overlapPolicy = job.overlapPolicy;
  body.delivery = job.delivery;
  if (Object.keys(job.labels).length > 0) body.labels = job.labels;
  if (job.maxLateness !== undefined) body.maxLateness = job.maxLateness;
  body.maxAttempts = job.maxAttempts;
  body.retry = job.retry;
  body.leaseSeconds = job.leaseSeconds;
  // The jitter offsets are drawn from the job's first id: an import keeps them.
  body.importedFrom = job.importedFrom ?? job.jobId;
  return body;
}
