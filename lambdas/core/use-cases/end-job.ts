import { runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { type Job, JobStatus } from "../job";
import { isUnfinished } from "../lifecycle/transition";
import { MissedRunPolicy } from "../missed-runs";
import { endsWithItsRun } from "../one-off-end";
import { PAUSED_RUN_REASON, type Run, RunStatus } from "../run";

/**
 * A job ends with its last run, whatever became of it (succeeded, dead-lettered, missed): once
 * the run marked `final` is finished, nothing more will be scheduled. `completeJob` is
 * conditional on the job still being active with no next run, so a cancelled or paused job
 * stays so (a resume ends it then) and a repeat is harmless.
 *
 * Two writes, so the first leaves a trace for the second (decision 0045). A last run carried by
 * its message (a firing's) has no repair-index entry: its finishers call this before they delete
 * the message, so one killed in between leaves the message to come back, and the lease step
 * that finds the run finished calls this again. A last run in the repair index (a replay, a
 * retry, a missed record) keeps its entry when it finishes and loses it only here, once the job
 * is marked (or cancelled, or ended); the repair pass calls this again for one left there.
 *
 * A job that may not be ended yet keeps its last run in view: a paused one, which its resume
 * ends (settleLastRun), one that still shows a next run (the sweep that created its last run
 * was cut short before it moved the job on; the next sweep will), and one a resume or a sweep
 * made active with no next run between this call's two reads. A run not in the index enters
 * it here (trackFinalRun), since its message is about to go, and the repair pass ends the job
 * when it can (settleLastRun). Answers whether the job's end is settled.
 */
export async function endJobAfter(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "settings">,
  run: { readonly jobId: string; readonly scheduledFor: number },
  finished: LastRunState | undefined,
  now: number,
): Promise<boolean> {
  if (!finished?.final) return false;
  const tracked = "tracked" in finished ? finished.tracked : finished.checkAt !== undefined;
  // A one-off ends with its run, unwritten (decision 0057): one read instead of a write. Only a
  // paused one keeps a missed run in view, for its resume (or the repair pass) to run it again.
  // What else this read decides, a job's kind, an update rarely changes, and a stale answer
  // either way ends the job as before (a recurring job's end is conditional): an eventually
  // consistent read does, at half the units. A missed run's read is consistent: it may be a
  // firing a pause kept from starting, and a pause a second old must be seen.
  const missed = "status" in finished && finished.status === RunStatus.Missed;
  let job = await deps.jobs.getJob(run.jobId, !missed);
  // Paused, or not there yet, in a read that may be a second old: a resume settling its job's
  // last run (settleLastRun) comes a moment after its own write, a create's job a moment after
  // its run. Read again, consistently, before keeping the run in view or taking the other way.
  if (!missed && (job === undefined || job.status === JobStatus.Paused))
    job = await deps.jobs.getJob(run.jobId);
  if (job !== undefined && endsWithItsRun(job)) {
    if (job.status === JobStatus.Paused && job.lastFiringAt === run.scheduledFor) {
      if (!tracked)
        await deps.runs.trackFinalRun(
          run.jobId,
          run.scheduledFor,
          now + deps.settings.repairGraceSeconds * 1000,
        );
      return false;
    }
    if (tracked) await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
    return true;
  }
  if (!(await deps.jobs.completeJob(run.jobId, now, run.scheduledFor))) {
    const job = await deps.jobs.getJob(run.jobId);
    // Active with no next run: a resume or the sweep wrote it since; what it wants of this run
    // (end, or a re-run of a firing missed in the pause) the repair pass decides (settleLastRun).
    // Active with a next run past this one, or whose last firing is another: a schedule change
    // gave the job later firings, and this run is not its last any more: nothing of the job's
    // end waits on it (decision 0046).
    const superseded = job !== undefined && isSupersededLast(job, run.scheduledFor);
    const waits =
      (job?.status === JobStatus.Paused && !(job.nextRunAt === undefined && superseded)) ||
      (job?.status === JobStatus.Active &&
        (job.nextRunAt === undefined ? !superseded : job.nextRunAt <= run.scheduledFor));
    if (waits) {
      const checkAt = now + deps.settings.repairGraceSeconds * 1000;
      if (!tracked) await deps.runs.trackFinalRun(run.jobId, run.scheduledFor, checkAt);
      return false;
    }
  }
  if (tracked) await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
  return true;
}

/**
 * A message found its run finished (a copy, or the message of a finisher that died): if that is
 * its job's last run and not in the repair index, the message is what re-drives the job's end,
 * before it is deleted (decision 0045). Anything else: nothing to do.
 */
export async function endJobOnMessage(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "settings">,
  run: Run | undefined,
  now: number,
): Promise<void> {
  // Not a cancelled one: its job was cancelled, or a schedule change superseded it (the job
  // goes on with other firings), and neither leaves anything to end.
  if (run?.final && !isUnfinished(run) && run.checkAt === undefined && run.status !== RunStatus.Cancelled)
    await endJobAfter(deps, run, run, now);
}

/**
 * What ending a job needs to know of its last run: whether it is the last, and whether it is in
 * the repair index (a finisher's answer says so; a run read says so by its check time).
 */
export type LastRunState =
  | { readonly final: boolean; readonly tracked: boolean }
  | Pick<Run, "final" | "checkAt" | "status">;

/**
 * An active job with no firing left (a one-off, or a bounded job past its end) whose last run
 * finished: a last run that a pause kept from starting is a firing that fell in the pause, and
 * the job's missed-run policy decides: `skip` leaves it missed and the job completes, `run-once`
 * and `catch-up` run it now (the same run, its run key unchanged); any other finished last run
 * completes the job. Called by resume, and by the repair pass for a last run still in its
 * index (a resume killed before it got here). True when the run was re-run or the job ended.
 */
export async function settleLastRun(
  deps: SchedulerDeps,
  job: Job,
  last: Pick<
    Run,
    "jobId" | "scheduledFor" | "final" | "status" | "error" | "finishedAt" | "attempt" | "checkAt"
  >,
  by: string,
  now: number,
): Promise<boolean> {
  if (!last.final || last.finishedAt === undefined) return false;
  // A run marked last before a schedule change gave the job another last firing (decision
  // 0046) is not re-run for it: it only settles.
  const superseded = isSupersededLast(job, last.scheduledFor);
  if (
    !superseded &&
    last.status === RunStatus.Missed &&
    last.error === PAUSED_RUN_REASON &&
    job.missedRuns !== MissedRunPolicy.Skip &&
    // At-most-once: only a run never leased is run again (one leased before the job became
    // at-most-once, or whose lease lapsed in the pause, may have run).
    (job.delivery !== "at-most-once" || last.attempt === 0)
  ) {
    const rerun = await deps.runs.replayRun(
      job.jobId,
      last.scheduledFor,
      { by, now, checkAt: now + deps.settings.repairGraceSeconds * 1000, keepsAttempts: true },
      RunStatus.Missed,
    );
    if (rerun) {
      await deps.queue.send([{ message: runMessageOf(rerun), delaySeconds: 0 }]);
      return true;
    }
  }
  return endJobAfter(deps, last, last, now);
}

/** A run marked last whose job's last firing is another (a schedule change came between). */
function isSupersededLast(job: Pick<Job, "lastFiringAt">, scheduledFor: number): boolean {
  return job.lastFiringAt !== undefined && job.lastFiringAt !== scheduledFor;
}
