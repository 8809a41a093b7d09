import { MAX_DELAY_SECONDS } from "../aws-limits";
import { baseLeadSecondsOf, delaySecondsUntil, runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { Job } from "../job";
import { scheduledRun } from "../lifecycle/creation";
import { planRuns } from "../missed-runs";
import { RunStatus } from "../run";

/**
 * A one-off job due within SQS's longest delay has its run made when it is created (decision
 * 0048): its message can be sent at once, with the delay that shows it its lead before its
 * second, so the job never enters the due index and no sweep moves it on.
 */
export const RUN_AT_CREATE_WITHIN_MS = MAX_DELAY_SECONDS * 1000;

/** Why a run made at create was cancelled: the job id belonged to another create's job. */
export const LOST_CREATE_RACE = "made by a create that lost to another with the same idempotency key";

/**
 * The firing a new active one-off job's run is made for at create: its only firing, due within
 * RUN_AT_CREATE_WITHIN_MS and neither missed nor late by its missed-run policy. Undefined sends
 * the job through the due index (a later job, a recurring one, a time already missed).
 */
export function firingMadeAtCreate(deps: SchedulerDeps, job: Job, now: number): number | undefined {
  if (job.schedule.kind !== "once" || job.nextRunAt === undefined) return undefined;
  if (job.nextRunAt < now || job.nextRunAt >= now + RUN_AT_CREATE_WITHIN_MS) return undefined;
  const plan = planRuns(
    job.schedule,
    { policy: job.missedRuns, maxLatenessMs: job.maxLatenessMs, graceMs: deps.settings.tickSeconds * 1000 },
    job.nextRunAt - 1,
    now,
    now + RUN_AT_CREATE_WITHIN_MS,
  );
  const [at] = plan.create;
  return plan.create.length === 1 && plan.missed.length === 0 && plan.next === undefined ? at : undefined;
}

/**
 * Makes a new one-off job's run and sends its message, before the job is stored (decision
 * 0048): a create killed after this leaves a pending run whose job does not exist, which the
 * lease step gives back while the create may still finish and leaves alone after (a retry with
 * the same idempotency key finds it and sends it again); killed before, nothing. Answers whether
 * this call made the run (not a retry's earlier attempt).
 */
export async function makeRunAtCreate(
  deps: SchedulerDeps,
  job: Job,
  at: number,
  now: number,
): Promise<boolean> {
  const run = scheduledRun(job, at, now, true);
  const made = (await deps.runs.createRun(run)) === "created";
  // An earlier attempt of this create (same idempotency key) made it: its message may be lost
  // with that attempt, so it is sent again (a second copy is harmless: the lease is fenced).
  const toSend = made ? run : await deps.runs.getRun(job.jobId, at);
  if (toSend?.status === RunStatus.Pending) {
    await deps.queue.send([
      {
        message: runMessageOf(toSend),
        delaySeconds: delaySecondsUntil(at, now, baseLeadSecondsOf(job.type)),
      },
    ]);
  }
  return made;
}

/**
 * The job stored after its run was made at create: moved past its only firing, as the sweep's
 * advance would leave it (no next run, its last firing recorded: decision 0046), so it is filed
 * in no due index.
 */
export function movedOnAtCreate(job: Job, at: number): Job {
  return { ...job, nextRunAt: undefined, lastFiringAt: at };
}

/**
 * A create whose job id was taken by a different job (the same idempotency key, another
 * request) cancels the run it made for it, which that job never asked for. A crash before this
 * leaves the run to run once and end nothing (its job's last firing is another).
 */
export async function cancelRunOfLostCreate(deps: SchedulerDeps, job: Job, at: number, now: number) {
  await deps.runs.abandonRun(job.jobId, at, "cancelled", LOST_CREATE_RACE, now, true);
}
