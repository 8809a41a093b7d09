import type { SchedulerDeps } from "../deps";

/**
 * A job ends with its last run, whatever became of it (succeeded, dead-lettered, missed): once
 * the run marked `final` is finished, nothing more will be scheduled. `completeJob` is
 * conditional on the job still being active, so a cancelled or paused job stays so (a resume
 * ends it then) and a repeat is harmless.
 *
 * Two writes, so the first leaves a trace for the second: a last run keeps its repair-index
 * entry when it finishes, and loses it only here, after the job is marked. A caller killed in
 * between leaves the run there, and the repair pass calls this again.
 */
export async function endJobAfter(
  deps: Pick<SchedulerDeps, "jobs" | "runs">,
  run: { readonly jobId: string; readonly scheduledFor: number },
  finished: { readonly final: boolean } | undefined,
  now: number,
): Promise<void> {
  if (!finished?.final) return;
  await deps.jobs.completeJob(run.jobId, now);
  await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
}
