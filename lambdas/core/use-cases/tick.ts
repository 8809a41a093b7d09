import type { SchedulerDeps } from "../deps";
import { groupsOfTurn, turnAt } from "../keys";
import type { LaneRetirement } from "../ports";
import { type RepairStats, repairRuns } from "./repair-runs";
import { isLaneJanitorMinute, retireIdleLanes } from "./retire-idle-lanes";
import { dispatchSweeps } from "./sweep-dispatch";

/**
 * The minute tick (EventBridge in AWS, a timer locally): fans the sweep out over the shard
 * groups whose turn it is (every group every `sweepEveryTicks` ticks, decision 0056), one
 * message each, so no single invocation reads all 1,024 shards and a failed group is retried
 * on its own; each message carries the slice of its group's one-offs made ahead to send
 * (decision 0059); then runs the repair pass, which reads only 16 small partitions, and counts the
 * dead letters (the depth an alarm watches). Once an hour it also deletes idle lanes; a
 * failure there is logged and never fails the tick.
 *
 * `turn` is the turn whose groups this tick sweeps, named by the tick's own rule (AWS) or
 * counted by the local ticker; it is never taken from the clock where the caller knows it,
 * because EventBridge may deliver two minutes' ticks within the same clock minute.
 */
export async function runTick(
  deps: SchedulerDeps,
  options: { readonly queueWasReset?: boolean; readonly turn?: number | undefined } = {},
): Promise<{
  readonly groups: number;
  readonly repair: RepairStats;
  readonly deadLetters: number;
  readonly lanes?: LaneRetirement | undefined;
}> {
  const now = deps.clock.now();
  const { tickSeconds, sweepEveryTicks } = deps.settings;
  const turn = options.turn ?? turnAt(now, tickSeconds, sweepEveryTicks);
  const groups = groupsOfTurn(turn, sweepEveryTicks);
  await dispatchSweeps(deps, groups, now);
  const repair = await repairRuns(deps, options);
  const deadLetters = await deps.runs.countDeadLetters();
  const lanes = isLaneJanitorMinute(deps.clock.now())
    ? await retireIdleLanes(deps).catch((error: unknown) => {
        deps.log.error("idle-lane pass failed", { error: String(error) });
        return undefined;
      })
    : undefined;
  return { groups: groups.length, repair, deadLetters, lanes };
}
