import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps, type HandlerDeps } from "../adapters/scheduler-deps";
import { type CompletionResult, completeRun } from "../core/use-cases/complete-run";
import { heartbeatRun } from "../core/use-cases/heartbeat-run";
import { type Lease, leaseRuns } from "../core/use-cases/lease-runs";
import { httpErrors } from "./http/error-middleware";
import { type HttpEvent, jsonBody, pathParameter, workerOf } from "./http/request";
import { json } from "./http/responses";
import { dispatch } from "./http/router";

const metrics = new Metrics({ namespace: "jobsched", serviceName: "jobsched" });

/** EMF: runs leased and how late each first attempt started (the dashboard's percentiles). */
function recordLeases(leases: readonly Lease[], now: number): void {
  if (leases.length === 0) return;
  metrics.addMetric("RunsLeased", MetricUnit.Count, leases.length);
  for (const lease of leases) {
    if (lease.attempt === 1) {
      metrics.addMetric(
        "StartLateness",
        MetricUnit.Milliseconds,
        Math.max(0, now - Date.parse(lease.scheduledFor)),
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

function recordOutcome(status: CompletionResult["status"]): void {
  metrics.addMetric(OUTCOME_METRICS[status], MetricUnit.Count, 1);
  metrics.publishStoredMetrics();
}

/**
 * The worker-facing lease protocol (/internal/*). Every route first finds the caller's worker
 * binding (403 without one); the use cases then see only the tenants it serves.
 */
export function createInternalHandler(deps: HandlerDeps) {
  const worker = (event: HttpEvent) => workerOf(event, deps.workerBindings);
  const route = dispatch({
    "POST /internal/leases": async (event) => {
      const leases = await leaseRuns(deps, worker(event), jsonBody(event));
      recordLeases(leases, deps.clock.now());
      return json(200, leases);
    },
    "POST /internal/leases/{runId}/heartbeat": async (event) =>
      json(200, await heartbeatRun(deps, worker(event), pathParameter(event, "runId"), jsonBody(event))),
    "POST /internal/leases/{runId}/complete": async (event) => {
      const result = await completeRun(deps, worker(event), pathParameter(event, "runId"), jsonBody(event));
      recordOutcome(result.status);
      return json(200, result);
    },
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
