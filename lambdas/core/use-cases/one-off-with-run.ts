import { MAX_DELAY_SECONDS } from "../aws-limits";
import { baseLeadSecondsOf, delaySecondsUntil, madeRunMessageOf, requestTagOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { Job } from "../job";
import { scheduledRun } from "../lifecycle/creation";
import { missedRunOptionsOf, planRuns } from "../missed-runs";
import { CURSOR_SAFETY_MS } from "./sweep-group";

/**
 * A one-off job due within SQS's longest delay has its run made when it is created (decision
 * 0048): its message can be sent at once, with the delay that shows it its lead before its
 * second, so the job never enters the due index and no sweep moves it on.
 */
export const RUN_AT_CREATE_WITHIN_MS = MAX_DELAY_SECONDS * 1000;

/**
 * The firing a new active one-off job's run is made for at create: its only firing, due within
 * RUN_AT_CREATE_WITHIN_MS and neither missed nor late by its missed-run policy. Undefined sends
 * the job through the due index (a later job, a recurring one, a time already missed).
 */
export function firingMadeAtCreate(deps: SchedulerDeps, job: Job, now: number): number | undefined {
  if (job.schedule.kind !== "once" || job.nextRunAt === undefined) return undefined;
  // A create with an idempotency key is made here too (decision 0052): its job id is the key's,
  // so another request with that key (a racing one, or a retry of a create killed before it
  // stored the job) may make a run for the same job. Its message carries its request's tag,
  // and the lease step takes only the runs of the request that stored the job.
  // While runs are written when made (an upgrade's first deploy), a keyed create's run would be
  // written whichever request made it: the due index's way, as before decision 0052.
  if (job.idempotencyKey !== undefined && deps.settings.writeRunsWhenMade === 1) return undefined;
  if (job.nextRunAt < now || job.nextRunAt >= now + RUN_AT_CREATE_WITHIN_MS) return undefined;
  const plan = planRuns(
    job.schedule,
    missedRunOptionsOf(job, deps.settings),
    job.nextRunAt - 1,
    now,
    now + RUN_AT_CREATE_WITHIN_MS,
  );
  const [at] = plan.create;
  return plan.create.length === 1 && plan.missed.length === 0 && plan.next === undefined ? at : undefined;
}

/**
 * Makes a new one-off job's run and sends its message, before the job is stored (decision
 * 0048). The run is not written (decision 0051): its message carries it until its lease writes
 * it. A create killed after the send leaves a message whose job does not exist, which the lease
 * step gives back while the create may still finish and drops after (the job was never
 * accepted: its caller got no answer, and a retry with the same key makes its run again);
 * killed before, nothing. The delay is counted from
 * the clock as it is now (the quota's count may have taken a while).
 */
export async function makeRunAtCreate(deps: SchedulerDeps, job: Job, at: number, now: number): Promise<void> {
  const run = scheduledRun(job, at, now, true);
  // Keyless, the job's id is new: no other create can store that job.
  const request = job.idempotencyKey === undefined ? undefined : requestTagOf(job);
  // Written as well during an upgrade from code that cannot read a made run's message.
  if (deps.settings.writeRunsWhenMade === 1) await deps.runs.createRun(run);
  await deps.queue.send([
    {
      message: madeRunMessageOf(run, request),
      delaySeconds: delaySecondsUntil(at, deps.clock.now(), baseLeadSecondsOf(job.type)),
    },
  ]);
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
 * How far ahead a one-off must be due to be made ahead at create (decision 0058): past the
 * furthest any sweep sends (the longest lookahead the settings allow, SQS's longest delay: a
 * deploy may raise the lookahead after the create), and the sweep cursor's margin more (decision
 * 0054), so that no tick has handed the instant out to a sweep (decision 0059) before this
 * create's write shows in the index. 17 minutes: a one-off nearer than 15 has its run sent at create (decision 0048).
 */
export const MADE_AHEAD_BEYOND_MS = MAX_DELAY_SECONDS * 1000 + CURSOR_SAFETY_MS;

/**
 * The firing a new active one-off job's run is made for ahead at create (decision 0058): its
 * only firing, at least MADE_AHEAD_BEYOND_MS ahead (so never late); its message is sent by the sweep
 * that reaches it. Undefined: the due index's way (not a one-off, too near, an upgrade's first
 * deploy, whose runs are written when made and whose older code could not send this one).
 */
export function firingMadeAhead(deps: SchedulerDeps, job: Job, now: number): number | undefined {
  if (job.schedule.kind !== "once" || job.nextRunAt === undefined) return undefined;
  if (deps.settings.writeRunsWhenMade === 1) return undefined;
  return job.nextRunAt >= now + MADE_AHEAD_BEYOND_MS ? job.nextRunAt : undefined;
}

/**
 * The job stored after its run was made ahead: moved past its only firing as one made at
 * create is (movedOnAtCreate), and filed in the due index's ahead partition of that firing.
 */
export function movedAheadAtCreate(job: Job, at: number): Job {
  return { ...movedOnAtCreate(job, at), madeAheadAt: at };
}
