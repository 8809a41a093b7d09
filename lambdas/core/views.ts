import {
  DstPolicy,
  type JobResponse,
  type JobSummaryResponse,
  type RunResponse,
  type ScheduleResponse,
} from "@jobsched/contract";
import { isoDuration } from "./duration";
import { formatInstant } from "./instant";
import { isUnsentAhead, type Job, JobStatus, type JobSummary } from "./job";
import { type Run, RunStatus, runKeyOf } from "./run";
import { nextFiring, type Schedule } from "./schedule/schedule";

/**
 * The JSON shapes the API returns (defined in responses.ts): instants as ISO strings, no storage
 * details.
 */

function optionalInstant(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : formatInstant(ms);
}

/** A schedule as the API spells it. */
export function scheduleView(schedule: Schedule): ScheduleResponse {
  const fields = scheduleFieldsView(schedule);
  return schedule.jitter ? { ...fields, jitter: isoDuration(schedule.jitter.windowMs) } : fields;
}

function scheduleFieldsView(schedule: Schedule): ScheduleResponse {
  switch (schedule.kind) {
    case "once":
      return { runAt: formatInstant(schedule.runAt) };
    case "cron":
      return {
        cron: schedule.cron,
        timeZone: schedule.timeZone,
        dstPolicy: schedule.dstPolicy ?? DstPolicy.FirstOccurrence,
        startAt: optionalInstant(schedule.startAt),
        endAt: optionalInstant(schedule.endAt),
      };
    case "interval":
      return {
        interval: { every: isoDuration(schedule.everyMs) },
        startAt: optionalInstant(schedule.startAt),
        endAt: optionalInstant(schedule.endAt),
      };
  }
}

export function runView(run: Run): RunResponse {
  return {
    runId: run.runId,
    runKey: runKeyOf(run.jobId, run.scheduledFor),
    scheduledFor: formatInstant(run.scheduledFor),
    status: run.status,
    attempt: run.attempt,
    fence: run.fence,
    startedAt: optionalInstant(run.startedAt),
    leaseExpiresAt: optionalInstant(run.leaseExpiresAt),
    retryAt: run.status === RunStatus.Pending ? optionalInstant(run.retryAt) : undefined,
    finishedAt: optionalInstant(run.finishedAt),
    error: run.error,
    // A record standing for a long backlog of missed firings: scheduledFor through missedThrough.
    missedCount: run.missedCount,
    missedThrough: optionalInstant(run.missedThrough),
    origin: run.origin,
    replays: run.replays,
    replayedAt: optionalInstant(run.replayedAt),
    replayedBy: run.replayedBy,
    failedAttempts: run.failedAttempts?.map((a) => ({
      attempt: a.attempt,
      fence: a.fence,
      startedAt: optionalInstant(a.startedAt),
      failedAt: formatInstant(a.failedAt),
      error: a.error,
    })),
  };
}

/**
 * The job's next run as a caller means it: a recurring job's item holds the firing after the
 * block of runs already made (decision 0044), so an active one shows its first firing from
 * `now` when that comes sooner. It is also where a paused job resumes from (control-job.ts).
 */
export function nextRunShown(job: JobSummary, now: number): number | undefined {
  if (job.status !== JobStatus.Active || job.schedule.kind === "once") return job.nextRunAt;
  // A bounded job whose last block is made stores no next run, but has firings still to come.
  const first = nextFiring(job.schedule, now - 1)?.at;
  if (first === undefined) return job.nextRunAt;
  return job.nextRunAt === undefined || first < job.nextRunAt ? first : job.nextRunAt;
}

/**
 * The next run a view shows: nextRunShown, or a one-off's firing made ahead at create (decision
 * 0058) while no tick has handed its firing out to a sweep: its group's place in the ahead ledger
 * (`aheadSentThrough`, decision 0059; undefined while none was recorded) has not passed it. Once sent, its run is shown in its history
 * instead, as for one made at create (decision 0048). An export moves a job it shows a next run
 * of, so a job whose run its stack will not send (its tick stopped) is moved, not lost.
 */
export function nextRunViewed(
  job: JobSummary,
  now: number,
  aheadSentThrough: number | undefined,
): number | undefined {
  const shown = nextRunShown(job, now);
  if (shown !== undefined || !isUnsentAhead(job, aheadSentThrough)) return shown;
  return job.madeAheadAt;
}

export function jobSummaryView(
  job: JobSummary,
  now: number,
  aheadSentThrough?: number | undefined,
): JobSummaryResponse {
  return {
    jobId: job.jobId,
    type: job.type,
    status: job.status,
    ...scheduleView(job.schedule),
    // A cancelled job runs nothing more (a nextRunAt it keeps is bookkeeping: recordCancelledFirings).
    nextRunAt:
      job.status === "cancelled" ? undefined : optionalInstant(nextRunViewed(job, now, aheadSentThrough)),
    createdAt: formatInstant(job.createdAt),
    updatedAt: formatInstant(job.updatedAt),
  };
}

export function jobView(
  job: Job,
  recentRuns: readonly Run[],
  now: number,
  aheadSentThrough?: number | undefined,
): JobResponse {
  return {
    ...jobSummaryView(job, now, aheadSentThrough),
    payload: job.payload,
    missedRuns: job.missedRuns,
    overlapPolicy: job.overlapPolicy ?? "allow",
    delivery: job.delivery ?? "at-least-once",
    ...(job.target === undefined ? {} : { target: { ...job.target } }),
    labels: job.labels === undefined ? {} : { ...job.labels },
    maxLateness: job.maxLatenessMs === undefined ? undefined : isoDuration(job.maxLatenessMs),
    maxAttempts: job.maxAttempts,
    retry: { base: isoDuration(job.retry.baseMs), cap: isoDuration(job.retry.capMs) },
    leaseSeconds: job.leaseSeconds,
    idempotencyKey: job.idempotencyKey,
    importedFrom: job.importedFrom,
    createdBy: job.createdBy,
    version: job.version,
    pauseReason: job.status === JobStatus.Paused ? job.audit.at(-1)?.reason : undefined,
    audit: job.audit.map((entry) => ({
      action: entry.action,
      by: entry.by,
      at: formatInstant(entry.at),
      ...(entry.reason === undefined ? {} : { reason: entry.reason }),
      ...(entry.fields === undefined ? {} : { fields: [...entry.fields] }),
    })),
    runs: recentRuns.map(runView),
  };
}
