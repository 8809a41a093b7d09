import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { NotFoundError } from "../errors";
import { isJobId } from "../ids";
import type { Job } from "../job";
import { runsKeptSince, withMadeRuns } from "../made-runs";
import type { Run } from "../run";
import { jobView } from "../views";

export const RECENT_RUNS = 20;

/** One of the caller's jobs; another tenant's job is reported as not found, as a missing one is. */
export async function callersJob(
  deps: Pick<SchedulerDeps, "jobs">,
  caller: Caller,
  jobId: string,
): Promise<Job> {
  const job = isJobId(jobId) ? await deps.jobs.getJob(jobId) : undefined;
  if (!job || job.tenant !== caller.tenant) throw new NotFoundError(`job ${jobId} not found`, "jobId");
  return job;
}

/** A job with its most recent runs. */
export async function getJob(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "clock" | "settings">,
  caller: Caller,
  jobId: string,
) {
  const job = await callersJob(deps, caller, jobId);
  return jobView(job, await recentRunsOf(deps, job), deps.clock.now());
}

/** A job's most recent runs, those made and not written yet among them (decision 0051). */
export async function recentRunsOf(
  deps: Pick<SchedulerDeps, "runs" | "settings" | "clock">,
  job: Job,
): Promise<Run[]> {
  const written = await deps.runs.listRecentRuns(job.jobId, RECENT_RUNS);
  return withMadeRuns(job, written, RECENT_RUNS, runsKeptSince(deps.settings, deps.clock.now()));
}
