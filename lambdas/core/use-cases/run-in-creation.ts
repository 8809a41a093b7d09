import { MAX_RUNS_PER_BLOCK } from "../advance-block";
import type { SchedulerDeps } from "../deps";
import { ConflictError } from "../errors";
import { type Job, JobStatus } from "../job";
import { RunStatus } from "../run";

/**
 * Refuses a change that would move an active job off its next firing while that firing's run
 * exists and the job was not moved past it: its creator (the sweep, a create, a resume) is at
 * work, or died between creating and sending it. The sweep sends such a run and moves the job
 * on within a minute; until then a pause, a cancel or a new schedule would take the job out of
 * the due index and leave the run unsent for good, for a scheduled run has no repair-index
 * entry (decision 0043). A 409 the caller retries in a few seconds. Reads the job's latest runs (a block's at most).
 * A pause or a cancel is refused for an unsent run only; a new schedule for any such run.
 */
export async function refuseWhileRunIsCreated(
  deps: Pick<SchedulerDeps, "runs">,
  job: Job,
  which: "any" | "unsent",
): Promise<void> {
  if (job.status !== JobStatus.Active || job.nextRunAt === undefined) return;
  // The runs the job was not moved past: its next firing's, and the rest of its block's.
  const nextRunAt = job.nextRunAt;
  const made = (await deps.runs.listRecentRuns(job.jobId, MAX_RUNS_PER_BLOCK + 1)).filter(
    (run) => run.scheduledFor >= nextRunAt,
  );
  const unmoved = made.length > 0;
  // Only a pending run without a repair-index entry can be left unsent; a new schedule must not
  // leave even a tracked one behind (it would run beside the new schedule's first run).
  const unsent = made.some((run) => run.status === RunStatus.Pending && run.checkAt === undefined);
  if (which === "any" ? unmoved : unsent) {
    throw new ConflictError(
      `job ${job.jobId} has a run due now that is being created; try again in a few seconds`,
      "jobId",
    );
  }
}
