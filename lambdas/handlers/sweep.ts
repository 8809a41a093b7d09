import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import middy from "@middy/core";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import { parseSweepMessage } from "../adapters/sqs/sqs-sweep-queue";
import type { SchedulerDeps } from "../core/deps";
import { SWEEP_GROUP_COUNT } from "../core/keys";
import { type SweepStats, sweepGroup } from "../core/use-cases/sweep-group";

/**
 * The sweeper: one SQS message per group of shards, the batch handled by Powertools' batch
 * processor, one group after the other. A group that fails is reported as a partial batch
 * failure, so SQS retries just that group; the others are done. Metrics go out through
 * Powertools' logMetrics middleware at the end of each invocation.
 */
const metrics = new Metrics({ namespace: "jobsched", serviceName: "jobsched" });

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** The EMF metrics of one sweep: what it read, created, avoided, and how late it enqueued. */
export function recordSweep(stats: SweepStats): void {
  metrics.addMetric("JobsRead", MetricUnit.Count, stats.jobsRead);
  metrics.addMetric("RunsCreated", MetricUnit.Count, stats.runsCreated);
  metrics.addMetric("DuplicatesAvoided", MetricUnit.Count, stats.duplicatesAvoided);
  metrics.addMetric("MissedRecorded", MetricUnit.Count, stats.missedRecorded);
  metrics.addMetric("FailedShards", MetricUnit.Count, stats.failedShards);
  metrics.addMetric("ConsumedReadUnits", MetricUnit.Count, stats.readUnits);
  metrics.addMetric("EnqueueLatenessP99", MetricUnit.Milliseconds, percentile(stats.enqueueLatenessMs, 99));
}

/**
 * A sweep starts no batch of one-offs made ahead in its function's last seconds (the rest go
 * with the group's next slice, decision 0059): time for its due jobs' end, its rewind and its
 * answer.
 */
const SEND_MARGIN_MS = 10_000;

export function createSweepHandler(deps: SchedulerDeps) {
  const processor = new BatchProcessor(EventType.SQS);
  const sweepRecord = async (record: SQSRecord, context: Context) => {
    const message = parseSweepMessage(record.body);
    if (!message || message.group >= SWEEP_GROUP_COUNT) {
      deps.log.warn("ignoring a malformed sweep message", { messageId: record.messageId });
      return; // retrying it would not help
    }
    const sendUntil = deps.clock.now() + context.getRemainingTimeInMillis() - SEND_MARGIN_MS;
    const stats = await sweepGroup(deps, message.group, message.ahead, { sendUntil });
    recordSweep(stats);
    if (stats.failedShards > 0)
      throw new Error(`group ${message.group}: ${stats.failedShards} shards failed`);
  };
  return middy<SQSEvent, SQSBatchResponse>()
    .use(logMetrics(metrics))
    .handler((event: SQSEvent, context: Context) =>
      processPartialResponse(event, (record: SQSRecord) => sweepRecord(record, context), processor, {
        context,
        // One group at a time, as before: a sweep reads many shards, and groups in parallel
        // would only compete for the same table.
        processInParallel: false,
        // A batch whose every group failed is answered, not thrown: SQS retries each group.
        throwOnFullBatchFailure: false,
      }),
    );
}

let lazy: ReturnType<typeof createSweepHandler> | undefined;

export const handler = (event: SQSEvent, context: Context) => {
  lazy ??= createSweepHandler(createSchedulerDeps(configFromEnvironment()));
  return lazy(event, context);
};
