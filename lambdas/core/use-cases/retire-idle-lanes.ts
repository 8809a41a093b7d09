import type { SchedulerDeps } from "../deps";
import type { LaneRetirement } from "../ports";

const DAY_MS = 86_400_000;
/** The tick deletes idle lanes once an hour, in this minute of it. */
export const LANE_JANITOR_MINUTE = 7;
/** One janitor pass stops starting work after this; the rest waits for the next hour. */
export const LANE_JANITOR_BUDGET_MS = 10_000;

/** Whether the tick at `now` is the hourly one that deletes idle lanes. */
export function isLaneJanitorMinute(now: number): boolean {
  return Math.floor(now / 60_000) % 60 === LANE_JANITOR_MINUTE;
}

/**
 * Deletes the lanes (SQS queues) no run was sent to for `idleLaneDays`, whose queues are empty,
 * and gives each deleted lane's type back to its tenant's types quota when no active or paused
 * job of the tenant has that type (decision 0019). A lane deleted too eagerly costs nothing but
 * its re-creation on the next send; a run is never in a deleted lane (the queue was empty, and
 * a send after the claim stops the deletion).
 */
export async function retireIdleLanes(deps: SchedulerDeps): Promise<LaneRetirement | undefined> {
  const days = deps.settings.idleLaneDays;
  if (days <= 0) return undefined;
  const now = deps.clock.now();
  const result = await deps.queue.retireIdleLanes(now - days * DAY_MS, now, LANE_JANITOR_BUDGET_MS);
  let typesReleased = 0;
  for (const { tenant, type } of result.retired) {
    try {
      if (await deps.quotas.releaseType(tenant, type)) typesReleased += 1;
    } catch (error) {
      deps.log.warn("could not give a job type back to its tenant's quota", {
        tenant,
        type,
        error: String(error),
      });
    }
  }
  for (const error of result.errors) deps.log.error("idle lane not deleted", { error });
  if (result.retired.length > 0 || result.errors.length > 0 || !result.finished) {
    deps.log.info("idle lanes", {
      examined: result.examined,
      retired: result.retired.length,
      kept: result.kept,
      typesReleased,
      errors: result.errors.length,
      finished: result.finished,
    });
  }
  return result;
}
