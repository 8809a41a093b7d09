import type { SchedulerDeps } from "../../lambdas/core/deps";
import { SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import type { SweepMessage } from "../../lambdas/core/ports";
import { dispatchSweeps } from "../../lambdas/core/use-cases/sweep-dispatch";
import { type SweepStats, sweepGroup } from "../../lambdas/core/use-cases/sweep-group";

const ALL_GROUPS = Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g);

/**
 * A tick at the clock's now as the deployment runs one: the groups' messages handed out (each
 * with its slice of the one-offs made ahead, decision 0059), then each swept as the sweeper
 * takes it. The messages are kept here, not sent to the deps' sweep queue. The stats of each
 * sweep, in the groups' order.
 */
export async function tickSweeps(
  deps: SchedulerDeps,
  groups: readonly number[] = ALL_GROUPS,
): Promise<SweepStats[]> {
  const messages = await handOutSlices(deps, groups);
  const stats: SweepStats[] = [];
  for (const message of messages) stats.push(await sweepGroup(deps, message.group, message.ahead));
  return stats;
}

/** A tick of one group: its sweep's stats. */
export async function tickSweep(deps: SchedulerDeps, group: number): Promise<SweepStats> {
  const [stats] = await tickSweeps(deps, [group]);
  if (!stats) throw new Error(`no sweep of group ${group}`);
  return stats;
}

/**
 * A tick's fan-out at the clock's now (decision 0059): the ledger read and moved as a tick moves
 * it, the groups' messages returned instead of sent to the deps' sweep queue.
 */
export async function handOutSlices(
  deps: SchedulerDeps,
  groups: readonly number[] = ALL_GROUPS,
): Promise<SweepMessage[]> {
  const messages: SweepMessage[] = [];
  const capture = { dispatch: async (sent: readonly SweepMessage[]) => void messages.push(...sent) };
  await dispatchSweeps({ ...deps, sweeps: capture }, groups, deps.clock.now());
  return messages;
}
