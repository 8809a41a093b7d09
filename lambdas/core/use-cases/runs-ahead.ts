import { MAX_RUNS_PER_BLOCK } from "../advance-block";
import type { SchedulerDeps } from "../deps";
import { type Run, RunStatus } from "../run";

/**
 * A recurring job's runs made ahead in its block (decision 0044) that have not come due:
 * pending firings' runs (not manual ones) scheduled after `now`, among its latest runs.
 */
export async function runsAhead(deps: Pick<SchedulerDeps, "runs">, jobId: string, now: number) {
  const recent = await deps.runs.listRecentRuns(jobId, MAX_RUNS_PER_BLOCK + 1);
  const ahead = recent.filter(
    (run) => run.origin === undefined && run.status === RunStatus.Pending && run.scheduledFor > now,
  );
  return { recent, ahead };
}

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
      );
      if (ended?.final) await deps.runs.settleFinalRun(run.jobId, run.scheduledFor);
    }),
  );
}
