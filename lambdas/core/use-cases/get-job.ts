import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { NotFoundError } from "../errors";
import { isJobId } from "../ids";
import { jobView } from "../views";

export const RECENT_RUNS = 20;

/** A job with its most recent runs. Another tenant's job is reported as not found. */
export async function getJob(deps: Pick<SchedulerDeps, "jobs" | "runs">, caller: Caller, jobId: string) {
  const job = isJobId(jobId) ? await deps.jobs.getJob(jobId) : undefined;
  if (!job || job.tenant !== caller.tenant) throw new NotFoundError(`job ${jobId} not found`, "jobId");
  return jobView(job, await deps.runs.listRecentRuns(jobId, RECENT_RUNS));
}
