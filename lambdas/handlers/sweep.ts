import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import middy from "@middy/core";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import { parseSweepMessage } from "../adapters/sqs/sqs-sweep-queue";
import type { SchedulerDeps } from "../core/deps";
import { SWEEP_GROUP_COUNT } from "../core/keys";
import { type SweepStats, sweepGroup } from "../core/use-cases/sweep-group";

/**
 * The sweeper: one SQS message per group of shards. A group that fails is reported as a
 * partial batch failure, so SQS retries just that group; the others are done.
 */
const metrics = new Metrics({ namespace: "jobsched", serviceName: "jobsched" });

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** One EMF metrics line per sweep: what it read, created, avoided, and how late it enqueued. */
export function recordSweep(stats: SweepStats): void {
  metrics.addMetric("JobsRead", MetricUnit.Count, stats.jobsRead);
  metrics.addMetric("RunsCreated", MetricUnit.Count, stats.runsCreated);
  metrics.addMetric("DuplicatesAvoided", MetricUnit.Count, stats.duplicatesAvoided);
  metrics.addMetric("MissedRecorded", MetricUnit.Count, stats.missedRecorded);
  metrics.addMetric("FailedShards", MetricUnit.Count, stats.failedShards);
  metrics.addMetric("ConsumedReadUnits", MetricUnit.Count, stats.readUnits);
  metrics.addMetric("EnqueueLatenessP99", MetricUnit.Milliseconds, percentile(stats.enqueueLatenessMs, 99));
  metrics.publishStoredMetrics();
}

export function createSweepHandler(deps: SchedulerDeps) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const batchItemFailures: SQSBatchResponse["batchItemFailures"] = [];
    for (const record of event.Records) {
      const message = parseSweepMessage(record.body);
      if (!message || message.group >= SWEEP_GROUP_COUNT) {
        deps.log.warn("ignoring a malformed sweep message", { messageId: record.messageId });
        continue; // retrying it would not help
      }
      const stats = await sweepGroup(deps, message.group);
      recordSweep(stats);
      if (stats.failedShards > 0) batchItemFailures.push({ itemIdentifier: record.messageId });
    }
    return { batchItemFailures };
  };
}

let lazy: ReturnType<typeof createSweepHandler> | undefined;

export const handler = middy<SQSEvent, SQSBatchResponse>().handler((event) => {
  lazy ??= createSweepHandler(createSchedulerDeps(configFromEnvironment()));
  return lazy(event);
});
