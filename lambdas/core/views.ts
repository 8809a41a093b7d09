import { Duration } from "luxon";
import { formatInstant } from "./instant";
import type { Job } from "./job";
import { type Run, runKeyOf } from "./run";
import type { Schedule } from "./schedule/schedule";

/** The JSON shapes the API returns: instants as ISO strings, no storage details. */

function optionalInstant(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : formatInstant(ms);
}

/** A schedule as the API spells it. */
export function scheduleView(schedule: Schedule) {
  switch (schedule.kind) {
    case "once":
      return { runAt: formatInstant(schedule.runAt) };
    case "cron":
      return {
        cron: schedule.cron,
        timeZone: schedule.timeZone,
        startAt: optionalInstant(schedule.startAt),
        endAt: optionalInstant(schedule.endAt),
      };
    case "interval":
      return {
        interval: { every: Duration.fromMillis(schedule.everyMs).rescale().toISO() },
        startAt: optionalInstant(schedule.startAt),
        endAt: optionalInstant(schedule.endAt),
      };
  }
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
    ...scheduleView(job.schedule),
    nextRunAt: optionalInstant(job.nextRunAt),
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey,
    createdAt: formatInstant(job.createdAt),
    createdBy: job.createdBy,
    updatedAt: formatInstant(job.updatedAt),
    runs: recentRuns.map(runView),
  };
}
