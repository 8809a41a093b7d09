import { formatInstant } from "./instant";
import type { Job } from "./job";
import { type Run, runKeyOf } from "./run";

/** The JSON shapes the API returns: instants as ISO strings, no storage details. */

function optionalInstant(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : formatInstant(ms);
}

export function runView(run: Run) {
  return {
    runId: run.runId,
    runKey: runKeyOf(run.jobId, run.scheduledFor),
    scheduledFor: formatInstant(run.scheduledFor),
    status: run.status,
    attempt: run.attempt,
    fence: run.fence,
    startedAt: optionalInstant(run.startedAt),
    leaseExpiresAt: optionalInstant(run.leaseExpiresAt),
    finishedAt: optionalInstant(run.finishedAt),
    error: run.error,
  };
}

export function jobView(job: Job, recentRuns: readonly Run[]) {
  return {
    jobId: job.jobId,
    type: job.type,
    status: job.status,
    payload: job.payload,
    runAt: formatInstant(job.schedule.runAt),
    nextRunAt: optionalInstant(job.nextRunAt),
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey,
    createdAt: formatInstant(job.createdAt),
    createdBy: job.createdBy,
    updatedAt: formatInstant(job.updatedAt),
    runs: recentRuns.map(runView),
  };
}
