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
 * is left to the lease step (withinShare), which sends it back as a fresh copy before SQS
 * would move it to the dead-letter queue. Returns the rest.
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
