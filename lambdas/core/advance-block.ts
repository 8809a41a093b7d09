import { firingsAfter, type Schedule } from "./schedule/schedule";

/** How far ahead a block may reach: SQS delays a message up to 15 minutes, less the lead. */
export const MAX_BLOCK_REACH_MS = 840_000;
/**
 * The most runs one advance makes for a job: a guard, for schedules fire at most once a minute
 * (a five-field cron, an interval of 60 s or more), so a block holds at most 14.
 */
export const MAX_RUNS_PER_BLOCK = 60;

/**
 * How far a sweep (or a create, resume or update firing a job near-term) makes a job's runs:
 * a one-off's to the lookahead's `horizon`; a recurring job's in a block, to the last multiple
 * of `blockSeconds` within MAX_BLOCK_REACH_MS (so 240-840 s ahead for 600) and at most
 * MAX_RUNS_PER_BLOCK firings from its next run, so that its item and due-index entry are
 * written once a block, not once a firing (decision 0044). Never short of `horizon`: what is
 * due within the lookahead is made now, whatever the block.
 */
export function blockHorizon(
  job: { readonly schedule: Schedule; readonly nextRunAt: number },
  now: number,
  horizon: number,
  blockSeconds: number,
): number {
  if (job.schedule.kind === "once" || blockSeconds <= 0) return horizon;
  // Blocks end on a grid of blockSeconds, the last grid point SQS can still delay a run to: jobs
  // firing at the same second are then made in the same sweep, whose dense-second lead counts
  // them all (densityLeads), whenever each was created.
  const grid = blockSeconds * 1000;
  const end = Math.floor((now + MAX_BLOCK_REACH_MS) / grid) * grid;
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
