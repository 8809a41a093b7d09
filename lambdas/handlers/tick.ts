import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import type { SchedulerDeps } from "../core/deps";
import { SWEEP_GROUP_COUNT } from "../core/keys";
import { repairRuns } from "../core/use-cases/repair-runs";
import { sweepGroup } from "../core/use-cases/sweep-group";

/** What a tick did, also logged as one structured line for dashboards. */
export interface TickReport {
  readonly jobsRead: number;
  readonly runsCreated: number;
  readonly duplicatesAvoided: number;
  readonly missedRecorded: number;
  readonly failedShards: number;
  readonly maxEnqueueLatenessMs: number;
  readonly repairedRuns: number;
  readonly durationMs: number;
}

/**
 * The minute tick (EventBridge in AWS, a timer locally): sweeps every shard group, then runs
 * the repair pass. A group that fails is logged and swept again on the next tick.
 */
export async function tick(
  deps: SchedulerDeps,
  options: { queueWasReset?: boolean } = {},
): Promise<TickReport> {
  const started = deps.clock.now();
  const groups = Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g);
  const sweeps = await Promise.all(groups.map((g) => sweepGroup(deps, g)));
  const repair = await repairRuns(deps, options);
  const report: TickReport = {
    jobsRead: sum(sweeps.map((s) => s.jobsRead)),
    runsCreated: sum(sweeps.map((s) => s.runsCreated)),
    duplicatesAvoided: sum(sweeps.map((s) => s.duplicatesAvoided)),
    missedRecorded: sum(sweeps.map((s) => s.missedRecorded)),
    failedShards: sum(sweeps.map((s) => s.failedShards)),
    maxEnqueueLatenessMs: Math.max(0, ...sweeps.flatMap((s) => s.enqueueLatenessMs)),
    repairedRuns: repair.resent,
    durationMs: deps.clock.now() - started,
  };
  if (report.jobsRead > 0 || report.repairedRuns > 0 || report.failedShards > 0)
    deps.log.info("tick", { ...report });
  return report;
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

let deps: SchedulerDeps | undefined;

export const handler = middy().handler(async () => {
  deps ??= createSchedulerDeps(configFromEnvironment());
  return tick(deps);
});
