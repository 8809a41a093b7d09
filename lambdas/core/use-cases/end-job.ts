import type { SchedulerDeps } from "../deps";
import { JobStatus } from "../job";

/**
 * A job ends with its last run, whatever became of it (succeeded, dead-lettered, missed): once
 * the run marked `final` is finished, nothing more will be scheduled. `completeJob` is
 * conditional on the job still being active with no next run, so a cancelled or paused job
 * stays so (a resume ends it then) and a repeat is harmless.
 *
 * Two writes, so the first leaves a trace for the second: a last run keeps its repair-index
 * entry when it finishes, and loses it only here, once the job is marked (or is paused,
 * cancelled or ended). A caller killed in between leaves the run there, and the repair pass
 * calls this again. So does a job that still shows a next run: the sweep that created its last
 * run was cut short before it moved the job on, and the next sweep will; the entry stays until
 * then. Answers whether the run left the repair index.
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
    if (job?.status === JobStatus.Active && job.nextRunAt !== undefined) return false;
  }
  await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
  return true;
}
