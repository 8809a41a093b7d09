import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import type { SchedulerDeps } from "../core/deps";
import { runTick } from "../core/use-cases/tick";

let deps: SchedulerDeps | undefined;
const metrics = new Metrics({ namespace: "jobsched", serviceName: "jobsched" });

/**
 * EventBridge's minute rule invokes this: fan the sweep out, repair lost deliveries, and
 * publish the dead-letter depth (an EMF metric the dead-letter alarm watches).
 */
export const handler = middy()
  .use(logMetrics(metrics))
  .handler(async () => {
    deps ??= createSchedulerDeps(configFromEnvironment());
    const result = await runTick(deps);
    if (result.repair.resent > 0) deps.log.info("tick", { ...result.repair });
    metrics.addMetric("DeadLetterDepth", MetricUnit.Count, result.deadLetters);
    metrics.addMetric("RunsResent", MetricUnit.Count, result.repair.resent);
    metrics.addMetric("LanesDeleted", MetricUnit.Count, result.lanes?.retired.length ?? 0);
    return result;
  });
