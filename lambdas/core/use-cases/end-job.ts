import { runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { type Job, JobStatus } from "../job";
import { MissedRunPolicy } from "../missed-runs";
import { PAUSED_RUN_REASON, type Run, RunStatus } from "../run";

/**
 * A job ends with its last run, whatever became of it (succeeded, dead-lettered, missed): once
 * the run marked `final` is finished, nothing more will be scheduled. `completeJob` is
 * conditional on the job still being active with no next run, so a cancelled or paused job
 * stays so (a resume ends it then) and a repeat is harmless.
 *
 * Two writes, so the first leaves a trace for the second: a last run keeps its repair-index
 * entry when it finishes, and loses it only here, once the job is marked (or cancelled, or
 * ended). A caller killed in between leaves the run there, and the repair pass calls this
 * again. So does a job that still shows a next run: the sweep that created its last run was
 * cut short before it moved the job on, and the next sweep will; and a paused job, which its
 * resume ends (settleLastRun), so that a resume killed before it did is repaired too. Answers
 * whether the run left the repair index.
 */
export async function endJobAfter(
  deps: Pick<SchedulerDeps, "jobs" | "runs">,
  run: { readonly jobId: string; readonly scheduledFor: number },
  finished: { readonly final: boolean } | undefined,
  now: number,
): Promise<boolean> {
  if (!finished?.final) return false;
  if (!(await deps.jobs.completeJob(run.jobId, now))) {
    const job = await deps.jobs.getJob(run.jobId);
    if (job?.status === JobStatus.Paused) return false;
    if (job?.status === JobStatus.Active && job.nextRunAt !== undefined) return false;
  }
  await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
  return true;
}

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
  last: Pick<Run, "jobId" | "scheduledFor" | "final" | "status" | "error" | "finishedAt" | "attempt">,
  by: string,
  now: number,
): Promise<boolean> {
  if (!last.final || last.finishedAt === undefined) return false;
  if (
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
      { by, now, checkAt: now + deps.settings.repairGraceSeconds * 1000 },
      RunStatus.Missed,
    );
    if (rerun) {
      await deps.queue.send([{ message: runMessageOf(rerun), delaySeconds: 0 }]);
      return true;
    }
  }
  return endJobAfter(deps, last, last, now);
}
