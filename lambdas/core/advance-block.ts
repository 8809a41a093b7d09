import { firingsAfter, type Schedule } from "./schedule/schedule";

/** The most runs one advance makes for a job: an every-second job's block is a minute of runs. */
export const MAX_RUNS_PER_BLOCK = 60;

/**
 * How far a sweep (or a create, resume or update firing a job near-term) makes a job's runs:
 * a one-off's to the lookahead's `horizon`; a recurring job's in a block, up to
 * `blockSeconds` ahead and at most MAX_RUNS_PER_BLOCK firings from its next run, so that its
 * item and due-index entry are written once a block, not once a firing (decision 0044). Never
 * short of `horizon`: what is due within the lookahead is made now, whatever the block.
 */
export function blockHorizon(
  job: { readonly schedule: Schedule; readonly nextRunAt: number },
  now: number,
  horizon: number,
  blockSeconds: number,
): number {
  if (job.schedule.kind === "once" || blockSeconds <= 0) return horizon;
  const end = now + blockSeconds * 1000;
  let count = 0;
  for (const { at } of firingsAfter(job.schedule, job.nextRunAt - 1)) {
    if (at >= end) break;
    count += 1;
    // The block ends just after its last firing: the next one is the job's next run.
    if (count === MAX_RUNS_PER_BLOCK) return Math.max(horizon, at + 1);
  }
  return Math.max(horizon, end);
}

/** The firings a job's block makes: from its next run up to blockHorizon (some may be missed). */
export function* blockFirings(
  job: { readonly schedule: Schedule; readonly nextRunAt: number },
  now: number,
  horizon: number,
  blockSeconds: number,
): Generator<number> {
  const end = blockHorizon(job, now, horizon, blockSeconds);
  let count = 0;
  for (const { at } of firingsAfter(job.schedule, job.nextRunAt - 1)) {
    if (at >= end || count === MAX_RUNS_PER_BLOCK) return;
    count += 1;
    yield at;
  }
}
