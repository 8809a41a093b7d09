import { MAX_RUNS_PER_BLOCK } from "./advance-block";
import { runIdOf } from "./ids";
import { isUnsentAhead, type Job } from "./job";
import { seededRun } from "./lifecycle/creation";
import type { Run } from "./run";
import { firingsAfter } from "./schedule/schedule";

/** The furthest back a view looks for runs made and not written: a day of firings. */
const VIEW_REACH_MS = 86_400_000;

/**
 * The runs a job's advances made after `after` whose items may not be written yet (decision
 * 0051), as the pending runs their messages carry: a made one-off's firing (its job moved past
 * it: no next run, its last firing recorded), or a recurring job's current schedule's firings
 * from `madeFrom` through `madeThrough`, its last one final when the job has no next run. Each
 * was made (a sweep records them only once it sent their runs) or recorded missed; a schedule
 * change starts the range again, writing the runs it keeps. Which of them are written is the
 * caller's to look up: a written run stands for itself. The latest `limit`, within a day.
 */
export function madeRunsAfter(job: Job, after: number, limit = MAX_RUNS_PER_BLOCK + 1): Run[] {
  // A one-off's made firing is its last, recorded when it was made (decisions 0046, 0048); a
  // recurring job's, the range its advances recorded (a pause moves its next run back, not what
  // was made), the last firing of a bounded one final.
  const last = job.lastFiringAt;
  const through = job.schedule.kind === "once" ? last : job.madeThrough;
  if (through === undefined || limit <= 0) return [];
  const made = (at: number) =>
    seededRun({
      runId: runIdOf(job.jobId, at),
      jobId: job.jobId,
      tenant: job.tenant,
      type: job.type,
      scheduledFor: at,
      final: at === last,
      createdAt: job.updatedAt,
    });
  if (job.schedule.kind === "once") return through > after ? [made(through)] : [];
  const start = Math.max(after, (job.madeFrom ?? through) - 1, through - VIEW_REACH_MS);
  const runs: Run[] = [];
  for (const { at } of firingsAfter(job.schedule, start)) {
    if (at > through) break;
    runs.push(made(at));
    if (runs.length > limit) runs.shift();
  }
  return runs;
}

/**
 * The runs made and not written among a job's firings after `after` (decision 0051): its made
 * runs there, less those `written` holds and those a backlog's missed record among them stands
 * for. `written` must hold every written run of the job after `after`.
 */
export function unwrittenMadeRuns(
  job: Job,
  written: readonly Run[],
  after: number,
  keptSince: number,
  aheadSentThrough?: number | undefined,
): Run[] {
  const at = new Set(written.map((run) => run.scheduledFor));
  const summarised = (instant: number) =>
    written.some(
      (run) => run.missedThrough !== undefined && run.scheduledFor < instant && instant <= run.missedThrough,
    );
  return madeRunsAfter(job, Math.max(after, keptSince - 1), Number.POSITIVE_INFINITY).filter(
    (run) =>
      !at.has(run.scheduledFor) && !summarised(run.scheduledFor) && shownYet(job, run, aheadSentThrough),
  );
}

/**
 * A one-off's run made ahead at create (decision 0058) is shown once a tick handed it out to a
 * sweep (its group's place in the ahead ledger passed it, decision 0059); before, the view shows its firing as the job's next run (nextRunViewed).
 */
function shownYet(job: Job, run: Run, aheadSentThrough: number | undefined): boolean {
  return !(isUnsentAhead(job, aheadSentThrough) && job.madeAheadAt === run.scheduledFor);
}

/**
 * A job's runs as a view shows them, newest first, `limit` of them: the latest written ones
 * (`written`, newest first, at most `limit`) and, among them, the runs made and not written
 * (within the run retention: `keptSince`).
 */
export function withMadeRuns(
  job: Job,
  written: readonly Run[],
  limit: number,
  keptSince: number,
  aheadSentThrough?: number | undefined,
): Run[] {
  const oldest = written.length >= limit ? (written.at(-1)?.scheduledFor ?? 0) : Number.NEGATIVE_INFINITY;
  return newestFirst([
    ...written,
    ...unwrittenMadeRuns(job, written, oldest, keptSince, aheadSentThrough),
  ]).slice(0, limit);
}

/**
 * From when a job's runs are kept (finished ones expire after the run retention): a made
 * firing before it with no item may have run and expired, so it is not taken for one in flight.
 */
export function runsKeptSince(settings: { readonly runRetentionDays: number }, now: number): number {
  return settings.runRetentionDays > 0
    ? now - settings.runRetentionDays * 86_400_000
    : Number.NEGATIVE_INFINITY;
}

export function newestFirst(runs: readonly Run[]): Run[] {
  return [...runs].sort((a, b) => b.scheduledFor - a.scheduledFor);
}

/**
 * Whether a firing of the job's current schedule was made by its advances (decision 0051): a
 * one-off's recorded last firing, or one in a recurring job's made range. Its run is written,
 * or carried by its message, or recorded missed.
 */
export function isMade(job: Job, at: number, keptSince: number): boolean {
  if (at < keptSince) return false;
  if (job.schedule.kind === "once") return at === job.lastFiringAt;
  return (
    job.madeFrom !== undefined && job.madeThrough !== undefined && job.madeFrom <= at && at <= job.madeThrough
  );
}
