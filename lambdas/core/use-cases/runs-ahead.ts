import { MAX_RUNS_PER_BLOCK } from "../advance-block";
import type { SchedulerDeps } from "../deps";
import { isFiledAhead, type Job } from "../job";
import { madeRunsAfter } from "../made-runs";
import { type Run, RunStatus } from "../run";

/**
 * A recurring job's runs made ahead in its block (decision 0044) that have not come due
 * (`ahead`: firings' runs, not manual ones, pending and never leased, scheduled after `now`),
 * and all its firings' runs never leased (`unstarted`), among its latest runs, those made and
 * not written among them (decision 0051).
 */
export async function runsAhead(deps: Pick<SchedulerDeps, "runs">, job: Job, now: number) {
  const stored = await deps.runs.listRecentRuns(job.jobId, MAX_RUNS_PER_BLOCK + 1);
  // Runs made ahead and not written (decision 0051) count as the pending runs they are; one
  // read finds those of them that are written.
  // A one-off made ahead whose firing passed unsent (its sweeper was down: decision 0058) is
  // one of them too, so a cancel records it.
  const made = madeRunsAfter(job, isFiledAhead(job) ? Math.min(now, (job.madeAheadAt ?? now) - 1) : now);
  const first = made[0]?.scheduledFor;
  const last = made.at(-1)?.scheduledFor;
  const writtenAhead =
    first === undefined || last === undefined ? [] : await deps.runs.listRunsBetween(job.jobId, first, last);
  const written = new Set([...stored, ...writtenAhead].map((run) => run.scheduledFor));
  const recent = [...stored, ...made.filter((run) => !written.has(run.scheduledFor))].sort(
    (a, b) => b.scheduledFor - a.scheduledFor,
  );
  // A firing's run (not a manual one) not started: a retry waiting is one too, but was started.
  const unstarted = recent.filter(
    (run) => run.origin === undefined && run.status === RunStatus.Pending && run.attempt === 0,
  );
  const ahead = unstarted.filter((run) => run.scheduledFor > now);
  return { recent, ahead, unstarted };
}

/** The reason a run made ahead is cancelled by a schedule change. */
export const SUPERSEDED_REASON = "the job's schedule changed before this run was due";

/**
 * Cancels runs made ahead that will not run (their job was cancelled, or its schedule changed),
 * after the job is written: should this die first, each is ended when it comes due (the lease
 * step cancels a cancelled job's runs) or runs once, as a run made before a schedule change
 * does (decision 0024). A last run leaves the repair index at once: nothing of its job's end
 * waits on it.
 */
export async function cancelRunsAhead(
  deps: Pick<SchedulerDeps, "runs">,
  runs: readonly Run[],
  reason: string,
  now: number,
): Promise<void> {
  await Promise.all(
    runs.map(async (run) => {
      const ended = await deps.runs.abandonRun(
        run.jobId,
        run.scheduledFor,
        RunStatus.Cancelled,
        reason,
        now,
        run.final,
        // One made but not written (decision 0051) is written cancelled.
        run,
      );
      if (ended?.final && ended.checkAt !== undefined)
        await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
    }),
  );
}
