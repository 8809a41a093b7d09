import { MAX_RUNS_PER_BLOCK } from "./advance-block";
import { runIdOf } from "./ids";
import type { Job } from "./job";
import { seededRun } from "./lifecycle/creation";
import type { Run } from "./run";
import { firingsAfter } from "./schedule/schedule";

/** The furthest back a view looks for runs made and not written: a day of firings. */
const VIEW_REACH_MS = 86_400_000;

/**
 * The runs a job's advances made after `after` whose items may not be written yet (decision
 * 0051), as the pending runs their messages carry: a made one-off's firing (its job moved past
 * it: no next run, its last firing recorded), or a recurring job's current schedule's firings
 * before its next run, the last one final when the job has no next run. Every firing of the
 * current schedule before the job's next run was made (a sweep moves a job past a firing only
 * once its run is sent; a schedule change goes on after the runs it keeps). Which of them are
 * written is the caller's to look up: a written run stands for itself. The latest `limit`.
 */
export function madeRunsAfter(job: Job, after: number, limit = MAX_RUNS_PER_BLOCK + 1): Run[] {
  const last = job.nextRunAt === undefined ? job.lastFiringAt : undefined;
  const end = job.nextRunAt ?? (last === undefined ? undefined : last + 1);
  if (end === undefined) return [];
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
  if (job.schedule.kind === "once") return last !== undefined && last > after ? [made(last)] : [];
  const runs: Run[] = [];
  for (const { at } of firingsAfter(job.schedule, Math.max(after, end - VIEW_REACH_MS))) {
    if (at >= end) break;
    runs.push(made(at));
    if (runs.length > limit) runs.shift();
  }
  return runs;
}

/**
 * A job's runs as a view shows them, newest first: the written ones, and before them the runs
 * made after the newest of those and not written yet (pending, carried by their messages).
 */
export function withMadeRuns(job: Job, written: readonly Run[], limit: number): Run[] {
  const newest = written.reduce((at, run) => Math.max(at, run.scheduledFor), job.createdAt - 1);
  const made = madeRunsAfter(job, newest, limit).reverse();
  return [...made, ...written].slice(0, limit);
}

/** The request fields whose change moves a job's firings (an update's audit names them). */
const FIRING_FIELDS = new Set(["runAt", "cron", "interval", "timeZone", "startAt", "jitter", "dstPolicy"]);

/**
 * From when the job's firings are those of its current schedule: its latest update that moved
 * its firings (its audit says), else its create. A firing of the current schedule from then
 * on, before the job's next run, was made (decision 0051), or recorded. An audit too long to
 * keep that change answers the create: firings are then taken for made rather than not, so a
 * backfill leaves a run in flight alone rather than run it twice.
 */
export function firingsSince(job: Pick<Job, "audit" | "createdAt">): number {
  const moved = job.audit.findLast(
    (entry) => entry.action === "updated" && (entry.fields ?? []).some((field) => FIRING_FIELDS.has(field)),
  );
  return moved?.at ?? job.createdAt;
}
