import type { SchedulerDeps } from "../deps";
import { type Job, JobStatus } from "../job";
import { cancelledRun } from "../lifecycle/creation";
import { CATCH_UP_CAP } from "../missed-runs";
import { firingsAfter } from "../schedule/schedule";

const REASON = "the job was cancelled before this due run was created";

/**
 * Firings of an active job that were due when it was cancelled but not yet swept into runs
 * (the sweeper was behind, or down) get a cancelled record each, so every due firing is
 * accounted for. The cancel keeps such a job's nextRunAt, and so its due-index entry, until
 * the records are written: the cancel writes them at once, and should it die before it has,
 * the sweep finds the job and calls this again. The records are written before the job leaves
 * the index; a repeat finds them written (conditional puts) and changes nothing.
 *
 * The firings are those from nextRunAt up to the cancel (the job's updatedAt), at most
 * CATCH_UP_CAP of them; a sweeper that far behind has raised its own alarms.
 */
export async function recordCancelledFirings(
  deps: Pick<SchedulerDeps, "jobs" | "runs">,
  job: Job,
  now: number,
) {
  if (job.status !== JobStatus.Cancelled || job.nextRunAt === undefined) return;
  const overdue: number[] = [];
  for (const { at } of firingsAfter(job.schedule, job.nextRunAt - 1)) {
    if (at > job.updatedAt || overdue.length === CATCH_UP_CAP) break;
    overdue.push(at);
  }
  await Promise.all(overdue.map((at) => deps.runs.createRun(cancelledRun(job, at, now, REASON))));
  await deps.jobs.closeCancelledJob(job.jobId, job.nextRunAt);
}
