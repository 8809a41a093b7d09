import type { SchedulerDeps } from "../deps";
import { parseRunId } from "../ids";
import type { Granted } from "./lease-runs";

/** How soon a run given back is visible again: at once for an invocation with time ahead of it. */
export const GIVE_BACK_SECONDS = 1;

/**
 * A run the dispatcher leased but will not deliver (no place at its target came in time for
 * the delivery to end by the invocation's deadline, or within the lease): its lease is given
 * back, so the run is pending again with the attempt the lease counted taken back (not a
 * failure; under at-most-once, not a run that may have run), and its message shows again in a
 * second. Should the give-back not be written, the lease stands and the run comes back when it
 * lapses, as after a crash; should the message's change fail, it comes back then too.
 */
export async function giveBackRun(deps: SchedulerDeps, { lease, receiptHandle }: Granted): Promise<void> {
  const key = parseRunId(lease.runId);
  const returned =
    key && (await deps.runs.returnLease(key.jobId, key.scheduledFor, lease.fence, deps.clock.now()));
  if (!returned) {
    // Revoked (cancel-previous) or lapsed and taken over meanwhile: the newer fence's run.
    deps.log.info("push run not given back: its lease was taken meanwhile", { runId: lease.runId });
    return;
  }
  const failed = await deps.queue.hide([{ receiptHandle, seconds: GIVE_BACK_SECONDS }]);
  if (failed.length > 0)
    deps.log.warn("could not show a given-back run's message again", { runId: lease.runId });
  deps.log.info("push run given back undelivered", { runId: lease.runId, attempt: returned.attempt });
}
