import { delaySecondsUntil, runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { DueJob } from "../job";
import { isFinished, newRun, type Run, RunStatus } from "../run";
import { nextRunAfter } from "../schedule/schedule";

/**
 * A run created less than this long ago is taken to be in the hands of whoever created it
 * (a sweeper racing us, or the API firing a near-term job), so we neither send it again nor
 * move its job on. Older pending runs were orphaned by a crash between "create" and "send".
 */
export const IN_FLIGHT_MS = 15_000;

export interface FireResult {
  /** Runs this call created. */
  readonly created: number;
  /** Runs that already existed: a racing sweeper or a re-run after a crash. */
  readonly duplicates: number;
  /** Jobs left in the index because another writer is still working on them. */
  readonly deferred: number;
  /** Milliseconds between each created run's due time and its enqueue, for lateness metrics. */
  readonly enqueueLateness: number[];
}

type Decision = { job: DueJob; run: Run; send: boolean; isNew: boolean } | { job: DueJob; deferred: true };

/**
 * Fires due jobs (at most 10, one SQS batch): creates each run with a conditional put on
 * (job id, scheduled instant), sends the new ones to the run queue with a delay that makes
 * them visible at their due second, then moves each job past that instant.
 *
 * Safe to repeat after a crash at any step: a repeat finds the run, sends it only if it was
 * orphaned, and never creates a second one.
 */
export async function fireJobs(deps: SchedulerDeps, due: readonly DueJob[]): Promise<FireResult> {
  const now = deps.clock.now();
  const graceMs = deps.settings.repairGraceSeconds * 1000;

  const decisions = await Promise.all(
    due.map(async (job): Promise<Decision> => {
      const run = newRun(job, job.nextRunAt, now, graceMs);
      if ((await deps.runs.createRun(run)) === "created") return { job, run, send: true, isNew: true };
      const existing = await deps.runs.getRun(job.jobId, job.nextRunAt);
      if (!existing) return { job, deferred: true }; // deleted under us; look again next sweep
      const orphaned = existing.status === RunStatus.Pending && now - existing.createdAt >= IN_FLIGHT_MS;
      if (existing.status === RunStatus.Pending && !orphaned) return { job, deferred: true };
      return { job, run: existing, send: orphaned && !isFinished(existing.status), isNew: false };
    }),
  );

  const toSend = decisions.flatMap((d) => ("run" in d && d.send ? [d.run] : []));
  if (toSend.length > 0) {
    await deps.queue.send(
      toSend.map((run) => ({
        message: runMessageOf(run),
        delaySeconds: delaySecondsUntil(run.scheduledFor, now),
      })),
    );
  }

  const ready = decisions.flatMap((d) => ("run" in d ? [d] : []));
  await Promise.all(
    ready.map(({ job }) =>
      deps.jobs.advanceJob(job.jobId, job.nextRunAt, nextRunAfter(job.schedule, job.nextRunAt), now),
    ),
  );

  const created = ready.filter((d) => d.isNew);
  return {
    created: created.length,
    duplicates: ready.length - created.length,
    deferred: decisions.length - ready.length,
    enqueueLateness: created.map((d) => Math.max(0, now - d.run.scheduledFor)),
  };
}
