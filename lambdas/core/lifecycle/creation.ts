import { runIdOf } from "../ids";
import type { DueJob } from "../job";
import type { MissedFiring } from "../missed-runs";
import { type Run, type RunSeed, RunStatus } from "../run";

/**
 * Where runs begin (the lifecycle's first transition, decision 0037): a pending run for a
 * firing, or the record of a firing that will not run (missed, cancelled). The sweep, a
 * manual run, a backfill and a cancel create runs only through these.
 */
export function newRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  scheduledFor: number,
  now: number,
  repairGraceMs: number,
  final = false,
): Run {
  return {
    runId: runIdOf(job.jobId, scheduledFor),
    jobId: job.jobId,
    tenant: job.tenant,
    type: job.type,
    scheduledFor,
    status: RunStatus.Pending,
    attempt: 0,
    fence: 0,
    createdAt: now,
    startedAt: undefined,
    leaseExpiresAt: undefined,
    workerId: undefined,
    finishedAt: undefined,
    error: undefined,
    checkAt: Math.max(scheduledFor, now) + repairGraceMs,
    final,
  };
}

/**
 * A firing's run, as the sweep creates it. The sweep moves the job past a firing only once its
 * run is sent, so a send lost to a crash is found again through the due index; once sent, the
 * message carries the run (a lapsed lease's message comes back; a copy of a run under a live
 * lease is kept hidden until the lease ends). So it takes no repair-index entry, two write
 * units a run less (decision 0043). A job's last run neither (decision 0045): its message is
 * deleted only once the job is marked, so a finisher that dies first leaves it to come back.
 */
export function scheduledRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  scheduledFor: number,
  now: number,
  final: boolean,
): Run {
  return { ...newRun(job, scheduledFor, now, 0, final), checkAt: undefined };
}

/**
 * The record of a firing that will not run, with the reason (or of a long backlog of them). The record of a job's last
 * firing is `final` and, like any finished last run, waits in the repair index (from `checkAt`)
 * until its job is marked.
 */
export function missedRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  firing: MissedFiring,
  now: number,
  last?: { readonly final: true; readonly checkAt: number },
): Run {
  return {
    ...newRun(job, firing.scheduledFor, now, 0, last?.final),
    status: RunStatus.Missed,
    finishedAt: now,
    error: firing.reason,
    checkAt: last?.checkAt,
    ...(firing.summary ? { missedCount: firing.summary.count, missedThrough: firing.summary.through } : {}),
  };
}

/** The record of a firing that came due but will never run because its job was cancelled. */
export function cancelledRun(
  job: Pick<DueJob, "jobId" | "tenant" | "type">,
  scheduledFor: number,
  now: number,
  reason: string,
): Run {
  return { ...missedRun(job, { scheduledFor, reason }, now), status: RunStatus.Cancelled };
}

/** The run a seed stands for, before its first write. */
export function seededRun(seed: RunSeed): Run {
  return {
    ...seed,
    status: RunStatus.Pending,
    attempt: 0,
    fence: 0,
    startedAt: undefined,
    leaseExpiresAt: undefined,
    workerId: undefined,
    finishedAt: undefined,
    error: undefined,
    checkAt: undefined,
  };
}
