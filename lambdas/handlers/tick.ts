import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import middy from "@middy/core";
import { z } from "zod";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import type { SchedulerDeps } from "../core/deps";
import { runTick } from "../core/use-cases/tick";

let deps: SchedulerDeps | undefined;
const metrics = new Metrics({ namespace: "jobsched", serviceName: "jobsched" });

/**
 * The tick's event: each turn's EventBridge rule names its turn (decision 0056). Anything else
 * (a test invoke from the console, a rule of an older version) falls back on the clock's turn.
 */
const tickEvent = z.object({ turn: z.number().int().min(0).max(1_000) });

/** The turn a tick's event names, or undefined where it names none. */
export function turnOfTickEvent(event: unknown): number | undefined {
  const parsed = tickEvent.safeParse(event);
  return parsed.success ? parsed.data.turn : undefined;
}

/**
 * EventBridge's minute rules invoke this: fan the sweep out over the turn's groups, repair lost
 * deliveries, and publish the dead-letter depth (an EMF metric the dead-letter alarm watches).
 */
export const handler = middy()
  .use(logMetrics(metrics))
  .handler(async (event: unknown) => {
    deps ??= createSchedulerDeps(configFromEnvironment());
    const turn = turnOfTickEvent(event);
    if (turn === undefined) deps.log.warn("tick event names no turn; the clock's turn is swept", {});
    const result = await runTick(deps, { turn });
    if (result.repair.resent > 0) deps.log.info("tick", { ...result.repair });
    metrics.addMetric("DeadLetterDepth", MetricUnit.Count, result.deadLetters);
    metrics.addMetric("RunsResent", MetricUnit.Count, result.repair.resent);
    metrics.addMetric("LanesDeleted", MetricUnit.Count, result.lanes?.retired.length ?? 0);
    return result;
  });
