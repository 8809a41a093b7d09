import { SAFE_VISIBILITY_SECONDS } from "../aws-limits";
import { dueOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { Job } from "../job";
import type { ReceivedRunMessage, RunMessage } from "../ports";
import type { TenantShare } from "../tenant-shares";
import { RECYCLE_AFTER_RECEIVES } from "./lease-runs";

/**
 * How long a run whose tenant's share is full is given back for. A tenant's share frees up as
 * its dispatches end, which takes their deliveries' time (seconds); giving its runs back for a
 * second at a time would have the event source receive and return a flood's backlog every
 * second, at the cost of the other tenants' dispatches.
 */
export const OVER_SHARE_BACK_SECONDS = 5;

type Admission = (message: RunMessage, job: Job | undefined) => boolean;

/** An admission that also keeps each tenant to its share, once the run is otherwise admitted. */
export function withinShare(admit: Admission, share: TenantShare | undefined): Admission {
  if (!share) return admit;
  return (message, job) => admit(message, job) && share.admits(message.tenant);
}

/**
 * Before the lease step reads anything: the runs of tenants whose share is full go back to the
 * queue for OVER_SHARE_BACK_SECONDS, their fences untouched. A message received often already
 * is left to the lease step, which sends it back at once as a fresh copy before SQS would move
 * it to the dead-letter queue (its count starts again). Returns the rest.
 */
export async function setAsideOverShare(
  deps: SchedulerDeps,
  received: readonly ReceivedRunMessage[],
  share: TenantShare | undefined,
): Promise<readonly ReceivedRunMessage[]> {
  if (!share) return received;
  const over = (r: ReceivedRunMessage) =>
    r.message !== undefined && (r.receiveCount ?? 0) < RECYCLE_AFTER_RECEIVES && share.full(r.message.tenant);
  const back = received.filter(over);
  if (back.length === 0) return received;
  const failed = await deps.queue.hide(
    back.map((r) => ({ receiptHandle: r.receiptHandle, seconds: OVER_SHARE_BACK_SECONDS })),
  );
  // One that stayed hidden comes back after the visibility it was received with.
  if (failed.length > 0)
    deps.log.warn("could not give back some runs whose tenant's share is full", { count: failed.length });
  return received.filter((r) => !back.includes(r));
}

/** A batch of at most this many runs is thin: holding it ties up a dispatch for a run or two. */
export const THIN_BATCH = 2;
/** Runs due at least this far ahead are not held in a thin batch. */
export const THIN_HOLD_LIMIT_MS = 5_000;
/** A thin batch's runs come back this long before they are due, with a dense second's others. */
export const THIN_COME_BACK_SECONDS = 3;

/**
 * A dispatch holds every run it leased until the run's second. At a dense second (whose runs
 * become visible up to 25 s ahead) a receive often brings one or two runs of a quiet tenant
 * among a flood's, or alone: held, each would tie up a dispatch for up to 25 s, and a quiet
 * tenant's hundred runs would need a hundred dispatches. So a batch left this thin (after the
 * runs over their tenant's share were set aside) whose runs are all due more than
 * THIN_HOLD_LIMIT_MS ahead is given back, fences untouched, to come again
 * THIN_COME_BACK_SECONDS before its second, when its second's runs are received together (and
 * a fair queue hands out the quiet tenants' first). A lone run due soon, as most are, is held
 * as before. True when the batch was given back.
 */
export async function gaveBackThinBatch(
  deps: SchedulerDeps,
  batch: readonly ReceivedRunMessage[],
): Promise<boolean> {
  if (batch.length === 0 || batch.length > THIN_BATCH) return false;
  // A worn message goes on to the lease step, which sends it back as a fresh copy (sendBack).
  if (batch.some((r) => (r.receiveCount ?? 0) >= RECYCLE_AFTER_RECEIVES)) return false;
  const now = deps.clock.now();
  const dues = batch.map((r) => (r.message ? dueOf(r.message) : now));
  if (dues.some((due) => due - now < THIN_HOLD_LIMIT_MS)) return false;
  const failed = await deps.queue.hide(
    batch.map((r, i) => ({
      receiptHandle: r.receiptHandle,
      // A retry due days ahead: hidden for what SQS allows, and hidden again when it comes back.
      seconds: Math.min(
        SAFE_VISIBILITY_SECONDS,
        Math.max(1, Math.floor(((dues[i] ?? now) - now) / 1000) - THIN_COME_BACK_SECONDS),
      ),
    })),
  );
  // One that stayed visible comes back after the visibility it was received with: no harm.
  if (failed.length > 0) deps.log.warn("could not give back a thin batch's runs", { count: failed.length });
  return true;
}
