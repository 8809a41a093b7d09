import type { SchedulerDeps } from "../../lambdas/core/deps";
import type { Job } from "../../lambdas/core/job";
import { runsKeptSince } from "../../lambdas/core/made-runs";
import { shownJobs } from "../../lambdas/core/one-off-end";

/** A job as the API shows it: a one-off its run ended is completed (decision 0057). */
export async function shownJobOf(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "settings" | "clock">,
  jobId: string,
): Promise<Job | undefined> {
  const job = await deps.jobs.getJob(jobId);
  const now = deps.clock.now();
  return job && (await shownJobs(deps.runs, [job], runsKeptSince(deps.settings, now), now))[0];
}

/** Its status as shown. */
export async function shownStatus(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "settings" | "clock">,
  jobId: string,
): Promise<Job["status"] | undefined> {
  return (await shownJobOf(deps, jobId))?.status;
}
