import { JOB_RECENT_RUNS } from "@jobsched/contract";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { NotFoundError } from "../errors";
import { isJobId } from "../ids";
import type { Job } from "../job";
import { runsKeptSince, withMadeRuns } from "../made-runs";
import { endingFiringOf, FINISHED_BEFORE_MS, shownJob, shownJobs } from "../one-off-end";
import type { Run } from "../run";
import { jobView } from "../views";
import { aheadSentThroughOf } from "./sweep-ahead";

/** The job's answer carries its newest runs, as many as the contract says. */
export const RECENT_RUNS = JOB_RECENT_RUNS;

/** One of the caller's jobs, as stored; another tenant's job is not found, as a missing one is. */
async function storedCallersJob(
  deps: Pick<SchedulerDeps, "jobs">,
  caller: Caller,
  jobId: string,
): Promise<Job> {
  const job = isJobId(jobId) ? await deps.jobs.getJob(jobId) : undefined;
  if (!job || job.tenant !== caller.tenant) throw new NotFoundError(`job ${jobId} not found`, "jobId");
  return job;
}

/**
 * One of the caller's jobs, as it is shown and acted on: a one-off its run ended is completed
 * (decision 0057). Another tenant's job is reported as not found, as a missing one is.
 */
export async function callersJob(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "settings" | "clock">,
  caller: Caller,
  jobId: string,
): Promise<Job> {
  const job = await storedCallersJob(deps, caller, jobId);
  const now = deps.clock.now();
  const [shown] = await shownJobs(deps.runs, [job], runsKeptSince(deps.settings, now), now);
  return shown ?? job;
}

/** A job with its most recent runs (its view reads the run that may end it among them: one read). */
export async function getJob(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "clock" | "settings">,
  caller: Caller,
  jobId: string,
) {
  return viewOf(deps, await storedCallersJob(deps, caller, jobId));
}

/**
 * A job's view with its recent runs, as shown: a one-off its run ended is completed (decision
 * 0057), whoever read the job and whenever.
 */
export async function viewOf(deps: Pick<SchedulerDeps, "jobs" | "runs" | "clock" | "settings">, job: Job) {
  const sentThrough = (await aheadSentThroughOf(deps, [job]))(job.jobId);
  const runs = await recentRunsOf(deps, job, sentThrough);
  const last = endingFiringOf(job);
  // A run further ahead than a lease hands it out has not finished: not read (FINISHED_BEFORE_MS).
  const shown =
    last === undefined || last > deps.clock.now() + FINISHED_BEFORE_MS
      ? job
      : shownJob(
          job,
          runs.find((r) => r.scheduledFor === last) ?? (await deps.runs.getRun(job.jobId, last)),
          runsKeptSince(deps.settings, deps.clock.now()),
        );
  return jobView(shown, runs, deps.clock.now(), sentThrough);
}

/** A job's most recent runs, those made and not written yet among them (decision 0051). */
export async function recentRunsOf(
  deps: Pick<SchedulerDeps, "runs" | "settings" | "clock">,
  job: Job,
  aheadSentThrough?: number | undefined,
): Promise<Run[]> {
  const written = await deps.runs.listRecentRuns(job.jobId, RECENT_RUNS);
  const now = deps.clock.now();
  return withMadeRuns(job, written, RECENT_RUNS, runsKeptSince(deps.settings, now), aheadSentThrough);
}
