import { blockHorizon } from "../advance-block";
import {
  baseLeadSecondsOf,
  DELIVERY_LEAD_SECONDS,
  delaySecondsUntil,
  EARLY_HOLD_MS,
  madeRunMessageOf,
  runMessageOf,
} from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { DueJob } from "../job";
import { missedRun, scheduledRun } from "../lifecycle/creation";
import { isUnfinished } from "../lifecycle/transition";
import { missedRunOptionsOf, planRuns } from "../missed-runs";
import { PAUSED_RUN_REASON, type Run, RunStatus } from "../run";
import { endJobAfter } from "./end-job";
import { markedLast } from "./unstarted-runs";

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
  /** Firings recorded as missed (missed-run policy, maxLateness). */
  readonly missed: number;
  /** Jobs left in the index because another writer is still working on them. */
  readonly deferred: number;
  /** Milliseconds between each created run's due time and its enqueue, for lateness metrics. */
  readonly enqueueLateness: number[];
}

interface JobOutcome {
  readonly deferred: boolean;
  /** The record of the job's last firing, when that was missed (then it is `final`). */
  readonly lastMissed: Run | undefined;
  /** The job's last run, written and finished before it was marked last (decision 0046's addendum). */
  readonly lastWritten: Run | undefined;
  /** The plan had no firing at all (a schedule that ended before the job's next run). */
  readonly nothingPlanned: boolean;
  /** With no next firing: the firing of the job's last run, made or recorded missed. */
  readonly last: number | undefined;
  readonly toSend: Run[];
  readonly created: Run[];
  readonly duplicates: number;
  readonly missed: number;
  readonly next: number | undefined;
  readonly job: DueJob;
  /** The firings this advance made or recorded missed, first and last (decision 0051). */
  readonly planned: { readonly from: number; readonly through: number } | undefined;
}

/**
 * Fires due jobs: plans each job's runs from its next firing up to the horizon (applying its
 * missed-run policy and maxLateness), makes each run (not written: its message carries it until
 * its lease writes it, decision 0051), records missed firings, sends the runs to the run queue
 * with a delay that makes them visible their lead before their due second (`leadOf`: longer
 * for a dense second), then moves each job on.
 *
 * Safe to repeat after a crash at any step: a repeat after the send sends the runs again, as
 * copies the lease step de-duplicates (one lease writes the run; a copy finds it held, then
 * finished); a firing whose run is written goes its own way (exists).
 */
export async function fireJobs(
  deps: SchedulerDeps,
  due: readonly DueJob[],
  horizon: number = deps.clock.now() + deps.settings.lookaheadSeconds * 1000,
  leadOf: (dueAt: number) => number = () => DELIVERY_LEAD_SECONDS,
): Promise<FireResult> {
  const now = deps.clock.now();
  const outcomes = await Promise.all(due.map((job) => fireOne(deps, job, now, horizon)));

  const toSend = outcomes.flatMap((o) => o.toSend);
  const made = new Set(outcomes.flatMap((o) => o.created));
  if (toSend.length > 0) {
    await deps.queue.send(
      toSend.map((run) => ({
        // A run made now is not written: its message carries it (decision 0051).
        message: made.has(run) ? madeRunMessageOf(run) : runMessageOf(run),
        // A push run's base lead is shorter (the dispatcher is billed while it holds a run).
        delaySeconds: delaySecondsUntil(
          run.scheduledFor,
          now,
          leadOf(run.scheduledFor) - DELIVERY_LEAD_SECONDS + baseLeadSecondsOf(run.type),
        ),
      })),
    );
  }

  const ready = outcomes.filter((o) => !o.deferred);
  await Promise.all(
    ready.map(async ({ job, next, last, lastMissed, lastWritten, nothingPlanned, planned }) => {
      const moved = await deps.jobs.advanceJob(job.jobId, job.nextRunAt, next, now, last, planned);
      // Its repair-index entry ends the job should this die first.
      if (moved && lastWritten) await endJobAfter(deps, lastWritten, { final: true, tracked: true }, now);
      // Nothing left to run, and the last firing was missed: the job is done. That record is
      // final and waits in the repair index, so a crash right here still ends the job.
      if (moved && lastMissed) await endJobAfter(deps, lastMissed, lastMissed, now);
      else if (moved && next === undefined && nothingPlanned) await deps.jobs.completeJob(job.jobId, now);
    }),
  );

  const created = ready.flatMap((o) => o.created);
  return {
    created: created.length,
    duplicates: ready.reduce((sum, o) => sum + o.duplicates, 0),
    missed: ready.reduce((sum, o) => sum + o.missed, 0),
    deferred: outcomes.length - ready.length,
    enqueueLateness: created.map((run) => Math.max(0, now - run.scheduledFor)),
  };
}

/** Who a run made again after a resume is recorded as replayed by. */
export const RESUMED_BY = "the job's missed-run policy, on resume";

/**
 * A run a pause kept from starting (recorded missed when it came due): at-most-once, only one
 * never leased (one leased before may have run), as a resumed job's last run is (end-job.ts).
 */
async function missedInPause(deps: SchedulerDeps, run: Run): Promise<boolean> {
  if (run.status !== RunStatus.Missed || run.error !== PAUSED_RUN_REASON) return false;
  if (run.attempt === 0) return true;
  // Rare: the due index does not hold the job's delivery.
  return (await deps.jobs.getJob(run.jobId))?.delivery !== "at-most-once";
}

/**
 * How far ahead of now a firing's run may be written already: its message (this sweep's copy,
 * or an earlier sweep's that died before moving the job on) shows up at most EARLY_HOLD_MS
 * before its second, and a run is written first by the step that receives it (decision 0051);
 * five seconds more for the clocks of two functions. A later firing has no item to find.
 */
export const WRITTEN_AHEAD_MS = EARLY_HOLD_MS + 5_000;

/**
 * The firings among `firings` a run of the job is written for: one consistent query over the
 * range of those that may be (WRITTEN_AHEAD_MS); none for a block made well ahead.
 */
async function writtenRunsOf(
  deps: SchedulerDeps,
  jobId: string,
  firings: readonly number[],
  now: number,
): Promise<Set<number>> {
  const near = firings.filter((at) => at <= now + WRITTEN_AHEAD_MS);
  if (near.length === 0) return new Set();
  const runs = await deps.runs.listRunsBetween(jobId, Math.min(...near), Math.max(...near));
  return new Set(runs.map((run) => run.scheduledFor));
}

async function fireOne(deps: SchedulerDeps, job: DueJob, now: number, horizon: number): Promise<JobOutcome> {
  const graceMs = deps.settings.repairGraceSeconds * 1000;
  const plan = planRuns(
    job.schedule,
    missedRunOptionsOf(job, deps.settings),
    job.nextRunAt - 1,
    now,
    blockHorizon(job, now, horizon, deps.settings.advanceBlockSeconds),
  );

  const toSend: Run[] = [];
  const created: Run[] = [];
  let duplicates = 0;
  let deferred = false;
  /** The job's last run, found written and finished, just marked last: the advance ends the job. */
  let lastWritten: Run | undefined;
  /** Firings whose run exists unfinished: a last one that does is not a missed record to end on. */
  const unfinished = new Set<number>();
  /**
   * A firing whose run exists already: a racing writer's, one orphaned before its send, or
   * one made ahead in a block and recorded missed because the job was paused when it came due.
   * The last runs now if the plan wants it to (`wanted`: the job's missed-run policy after a
   * resume), as if the pause had kept it from being made (decision 0044).
   */
  const exists = async (scheduledFor: number, wanted: boolean, final: boolean) => {
    duplicates += 1;
    const found = await deps.runs.getRun(job.jobId, scheduledFor);
    if (!found) {
      deferred = true; // deleted under us; look again next sweep
      return;
    }
    // The job's last firing, written not last by another schedule's copy (decision 0046's
    // addendum): marked last.
    const existing = await markedLast(deps, found, final);
    const pending = existing.status === RunStatus.Pending;
    // A last run pending or leased (a create that died before the job moved on, then a lease):
    // the firing is running, not missed, and the run ends the job. One not marked last (made
    // ahead in a block, under a long backlog's summary record; not this plan's last firing, or
    // it would be marked above) ends nothing: the record does.
    if (isUnfinished(existing) && existing.final) unfinished.add(scheduledFor);
    if (pending && now - existing.createdAt < IN_FLIGHT_MS) deferred = true;
    else if (pending)
      toSend.push(existing); // orphaned by a crash between create and send
    else if (wanted && (await missedInPause(deps, existing))) {
      const rerun = await deps.runs.replayRun(
        job.jobId,
        scheduledFor,
        { by: RESUMED_BY, now, checkAt: now + graceMs, keepsAttempts: true },
        RunStatus.Missed,
      );
      if (rerun) {
        toSend.push(rerun); // run again: its own end ends the job
        return;
      }
    }
    // A finished last run out of the repair index, not run again: no copy of it is sent to end
    // the job, so it enters the index (should this die before its advance) and the advance ends
    // the job. A finished last run is in the index already whenever its job was not ended (its
    // finisher tracks it), so this writes only for one marked just now, or by a sweep that died
    // before tracking it.
    if (existing.final && !isUnfinished(existing) && existing.checkAt === undefined) {
      if (await deps.runs.trackFinalRun(job.jobId, scheduledFor, now + graceMs)) lastWritten = existing;
    }
  };
  // The firings' runs are made, not written (decision 0051): one read finds those a run of
  // exists for already (a racing sweeper's or a crashed one's that was leased, a record a pause
  // left, a buffered waiter), which go the way of an existing run; the others are sent.
  const written = await writtenRunsOf(deps, job.jobId, plan.create, now);
  await Promise.all(
    plan.create.map(async (scheduledFor) => {
      const final = plan.next === undefined && scheduledFor === plan.create.at(-1);
      if (written.has(scheduledFor)) return exists(scheduledFor, true, final);
      const run = scheduledRun(job, scheduledFor, now, final);
      // Written as well during an upgrade from code that cannot read a made run's message.
      if (deps.settings.writeRunsWhenMade === 1 && (await deps.runs.createRun(run)) === "exists")
        return exists(scheduledFor, true, final);
      created.push(run);
      toSend.push(run);
    }),
  );
  // With no run to create and no firing left, the last missed firing is the job's last run.
  const lastMissedAt = plan.next === undefined && plan.create.length === 0 ? plan.missed.at(-1) : undefined;
  const missedRuns = plan.missed.map((m) =>
    missedRun(job, m, now, m === lastMissedAt ? { final: true, checkAt: now + graceMs } : undefined),
  );
  // A firing late by now may have had its run written in time (by code before decision 0051, or
  // a buffer-one waiter) and not sent: that run is sent still (the lease step applies
  // maxLateness to it), not lost. One made and sent meets a missed record when its copy comes.
  await Promise.all(
    missedRuns.map(async (run) => {
      if ((await deps.runs.createRun(run)) === "exists") await exists(run.scheduledFor, false, run.final);
    }),
  );
  return {
    job,
    // One end for the last firing: its written run's, when that is what the record met.
    lastMissed: missedRuns.find(
      (run) =>
        run.final && !unfinished.has(run.scheduledFor) && run.scheduledFor !== lastWritten?.scheduledFor,
    ),
    lastWritten,
    nothingPlanned: plan.create.length === 0 && plan.missed.length === 0,
    last: plan.next === undefined ? (plan.create.at(-1) ?? lastMissedAt?.scheduledFor) : undefined,
    deferred,
    toSend: deferred ? toSend.filter((run) => created.includes(run)) : toSend,
    created,
    duplicates,
    missed: plan.missed.length,
    next: plan.next,
    planned: plannedRange([...plan.create, ...plan.missed.map((m) => m.summary?.through ?? m.scheduledFor)]),
  };
}

function plannedRange(firings: readonly number[]): JobOutcome["planned"] {
  return firings.length === 0 ? undefined : { from: Math.min(...firings), through: Math.max(...firings) };
}
