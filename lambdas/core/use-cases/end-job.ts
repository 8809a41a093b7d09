import type { SchedulerDeps } from "../deps";

/**
 * A job ends with its last run, whatever became of it (succeeded, dead-lettered, missed): once
 * the run marked `final` is finished, nothing more will be scheduled. `completeJob` is
 * conditional on the job still being active, so a cancelled job stays cancelled and a repeat
 * is harmless.
 */
export async function endJobAfter(
  deps: Pick<SchedulerDeps, "jobs">,
  jobId: string,
  run: { readonly final: boolean } | undefined,
  now: number,
): Promise<void> {
  if (run?.final) await deps.jobs.completeJob(jobId, now);
}
