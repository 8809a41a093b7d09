import type { SchedulerDeps } from "../deps";
import { SWEEP_GROUP_COUNT } from "../keys";
import { type RepairStats, repairRuns } from "./repair-runs";

/**
 * The minute tick (EventBridge in AWS, a timer locally): fans the sweep out over the shard
 * groups, one message each, so no single invocation reads all 1,024 shards and a failed group
 * is retried on its own; then runs the repair pass, which reads only 16 small partitions,
 * and counts the dead letters (the depth an alarm watches).
 */
export async function runTick(
  deps: SchedulerDeps,
  options: { readonly queueWasReset?: boolean } = {},
): Promise<{ readonly groups: number; readonly repair: RepairStats; readonly deadLetters: number }> {
  const groups = Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g);
  await deps.sweeps.dispatch(groups, deps.clock.now());
  const repair = await repairRuns(deps, options);
  const deadLetters = await deps.runs.countDeadLetters();
  return { groups: groups.length, repair, deadLetters };
}
