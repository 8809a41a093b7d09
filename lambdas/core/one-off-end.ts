import { EARLY_HOLD_MS } from "./delivery";
import { type Job, JobStatus } from "./job";
import { isUnfinished } from "./lifecycle/transition";
import { type Run, RunStatus } from "./run";

/**
 * A one-off job's end is its run's (decision 0057): no write marks it completed. An active
 * one-off that has no next run, and whose run at its recorded firing is finished and settled
 * (out of the repair index, so nothing will run it again), is shown and treated as completed.
 * Recurring jobs, whose last run is found through their schedule's end, keep their written end.
 */
export function endsWithItsRun(job: { readonly schedule: { readonly kind: string } }): boolean {
  return job.schedule.kind === "once";
}

/** What the rule reads of a job: a stored item's few fields do (a recount reads no more). */
type Waiting = { readonly schedule: { readonly kind: string }; readonly status: string } & Pick<
  Job,
  "nextRunAt" | "lastFiringAt"
>;
type Ending = Pick<Run, "scheduledFor" | "status" | "checkAt">;

/** The firing whose run ends this job, while the job waits on it: else undefined. */
export function endingFiringOf(job: Waiting): number | undefined {
  return endsWithItsRun(job) && job.status === JobStatus.Active && job.nextRunAt === undefined
    ? job.lastFiringAt
    : undefined;
}

/**
 * Whether `run` ends the job: its ending firing's run, finished, settled, and not cancelled. A
 * firing before `keptSince` (the run retention: made-runs.ts) whose run is gone ended long ago:
 * a made run finishes within the retention (it runs, or is recorded missed: unstarted-runs.ts),
 * and its item expires after it.
 */
export function isEndedBy(job: Waiting, run: Ending | undefined, keptSince: number): boolean {
  const at = endingFiringOf(job);
  if (at === undefined) return false;
  if (run === undefined) return at < keptSince;
  return (
    run.scheduledFor === at &&
    !isUnfinished(run) &&
    run.status !== RunStatus.Cancelled &&
    run.checkAt === undefined
  );
}

/** The job as it is shown and acted on: completed when its run ended it, else as stored. */
export function shownJob<J extends Waiting & Pick<Job, "updatedAt">>(
  job: J,
  run: (Ending & Pick<Run, "finishedAt">) | undefined,
  keptSince: number,
): J {
  if (!isEndedBy(job, run, keptSince)) return job;
  return { ...job, status: JobStatus.Completed, updatedAt: Math.max(job.updatedAt, run?.finishedAt ?? 0) };
}

/**
 * How long before its second a run can have finished: a lease hands it out at most
 * EARLY_HOLD_MS early (decision 0014), and five seconds more for two functions' clocks. A firing
 * further ahead than this ended nothing yet: its run is not read (a one-off made ahead at create
 * waits days on it: decision 0058).
 */
export const FINISHED_BEFORE_MS = EARLY_HOLD_MS + 5_000;

/**
 * The jobs as shown: each one waiting on a run that may have finished by `now` reads it (one
 * read each), the rest as stored.
 */
export async function shownJobs<J extends Waiting & Pick<Job, "jobId" | "updatedAt">>(
  runs: { getRun(jobId: string, scheduledFor: number): Promise<Run | undefined> },
  jobs: readonly J[],
  keptSince: number,
  now: number,
): Promise<J[]> {
  return Promise.all(
    jobs.map(async (job) => {
      const at = endingFiringOf(job);
      if (at === undefined || at > now + FINISHED_BEFORE_MS) return job;
      return shownJob(job, await runs.getRun(job.jobId, at), keptSince);
    }),
  );
}
