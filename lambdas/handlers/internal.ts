import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps, type HandlerDeps } from "../adapters/scheduler-deps";
import type { ItemOutcome } from "../core/batch";
import type { Log } from "../core/deps";
import { DomainError } from "../core/errors";
import { type CompletionResult, completeRun } from "../core/use-cases/complete-run";
import { completeRuns } from "../core/use-cases/complete-runs";
import { heartbeatRun, heartbeatRuns } from "../core/use-cases/heartbeat-run";
import { grantLaneListening } from "../core/use-cases/lane-listening";
import { type Lease, leaseRuns } from "../core/use-cases/lease-runs";
import { httpErrors, statusOf } from "./http/error-middleware";
import { type HttpEvent, jsonBody, pathParameter, workerOf } from "./http/request";
import { json } from "./http/responses";
import { dispatch } from "./http/router";

/**
 * Published by hand, only when there is something to publish: Powertools' logMetrics middleware
 * logs a warning on every invocation that recorded nothing, and most lease polls and heartbeats
 * record nothing (the sweeper and the tick, which always record, use the middleware).
 */
const metrics = new Metrics({ namespace: "jobsched", serviceName: "jobsched" });

/** EMF: runs leased and how late each first attempt started (the dashboard's percentiles). */
function recordLeases(leases: readonly Lease[]): void {
  if (leases.length === 0) {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics(); // runs recorded lost
    return;
  }
  metrics.addMetric("RunsLeased", MetricUnit.Count, leases.length);
  for (const lease of leases) {
    if (lease.attempt === 1) {
      metrics.addMetric(
        "StartLateness",
        MetricUnit.Milliseconds,
        // Leases are handed over ahead: the worker starts the run at startAt, not now.
        Math.max(0, Date.parse(lease.startAt) - Date.parse(lease.scheduledFor)),
      );
    }
  }
  metrics.publishStoredMetrics();
}

const OUTCOME_METRICS = {
  succeeded: "RunsSucceeded",
  retrying: "RunsRetried",
  "dead-lettered": "RunsDeadLettered",
} as const;

function recordOutcomes(statuses: ReadonlyArray<CompletionResult["status"]>): void {
  if (statuses.length === 0) return;
  for (const status of new Set(statuses)) {
    metrics.addMetric(OUTCOME_METRICS[status], MetricUnit.Count, statuses.filter((s) => s === status).length);
  }
  metrics.publishStoredMetrics();
}

/**
 * A batched call's answer: each item with the status the one-run route would have given it.
 * An unexpected error is that item's 500 (logged; the worker retries the item), never the call's.
 */
function itemResults<T>(outcomes: ReadonlyArray<ItemOutcome<T>>, log: Log) {
  return {
    results: outcomes.map((outcome) => {
      if (outcome.ok) return { runId: outcome.runId, status: 200, result: outcome.value };
      const { error } = outcome;
      const status = error instanceof DomainError ? statusOf(error) : 500;
      if (status >= 500) {
        log.error("batch item failed", {
          runId: outcome.runId,
          error: { name: error.name, message: error.message, stack: error.stack },
        });
        return {
          runId: outcome.runId,
          status: 500,
          error: { code: "InternalError", message: "internal error; the item may be retried" },
        };
      }
      const domain = error as DomainError;
      return {
        runId: outcome.runId,
        status,
        error: {
          code: domain.code,
          message: domain.message,
          ...(domain.field === undefined ? {} : { field: domain.field }),
        },
      };
    }),
  };
}

/**
 * The worker-facing lease protocol (/internal/*). Every route first finds the caller's worker
 * binding (403 without one); the use cases then see only the tenants it serves.
 */
export function createInternalHandler(handlerDeps: HandlerDeps) {
  // Runs an at-most-once lease step records lost: a metric (and alarmable), published below.
  const deps: HandlerDeps = {
    ...handlerDeps,
    counters: { count: (name, value) => metrics.addMetric(name, MetricUnit.Count, value) },
  };
  const worker = (event: HttpEvent) => workerOf(event, deps.workerBindings);
  const route = dispatch({
    "POST /internal/leases": async (event) => {
      const leases = await leaseRuns(deps, worker(event), jsonBody(event));
      recordLeases(leases);
      return json(200, leases);
    },
    "POST /internal/leases/{runId}/heartbeat": async (event) =>
      json(200, await heartbeatRun(deps, worker(event), pathParameter(event, "runId"), jsonBody(event))),
    "POST /internal/leases/{runId}/complete": async (event) => {
      const result = await completeRun(deps, worker(event), pathParameter(event, "runId"), jsonBody(event));
      recordOutcomes([result.status]);
      return json(200, result);
    },
    "POST /internal/completions": async (event) => {
      const outcomes = await completeRuns(deps, worker(event), jsonBody(event));
      recordOutcomes(outcomes.flatMap((o) => (o.ok ? [o.value.status] : [])));
      return json(200, itemResults(outcomes, deps.log));
    },
    "POST /internal/heartbeats": async (event) =>
      json(200, itemResults(await heartbeatRuns(deps, worker(event), jsonBody(event)), deps.log)),
    "POST /internal/lanes": async (event) =>
      json(
        200,
        await grantLaneListening(
          { lanes: deps.laneListening, quotas: deps.quotas, clock: deps.clock },
          worker(event),
          jsonBody(event),
        ),
      ),
  });
  return middy<HttpEvent>().use(httpErrors(deps.log)).handler(route);
}

let lazy: ReturnType<typeof createInternalHandler> | undefined;

export const handler = (
  event: HttpEvent,
  context: Parameters<ReturnType<typeof createInternalHandler>>[1],
) => {
  lazy ??= createInternalHandler(createSchedulerDeps(configFromEnvironment()));
  return lazy(event, context);
};
