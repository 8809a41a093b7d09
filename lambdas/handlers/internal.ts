import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps, type HandlerDeps } from "../adapters/scheduler-deps";
import { completeRun } from "../core/use-cases/complete-run";
import { heartbeatRun } from "../core/use-cases/heartbeat-run";
import { leaseRuns } from "../core/use-cases/lease-runs";
import { httpErrors } from "./http/error-middleware";
import { callerOf, type HttpEvent, jsonBody, pathParameter } from "./http/request";
import { json } from "./http/responses";
import { dispatch } from "./http/router";

/** The worker-facing lease protocol (/internal/*). */
export function createInternalHandler(deps: HandlerDeps) {
  const route = dispatch({
    "POST /internal/leases": async (event) => {
      callerOf(event, deps.tenantMapping);
      return json(200, await leaseRuns(deps, jsonBody(event)));
    },
    "POST /internal/leases/{runId}/heartbeat": async (event) => {
      callerOf(event, deps.tenantMapping);
      return json(200, await heartbeatRun(deps, pathParameter(event, "runId"), jsonBody(event)));
    },
    "POST /internal/leases/{runId}/complete": async (event) => {
      callerOf(event, deps.tenantMapping);
      return json(200, await completeRun(deps, pathParameter(event, "runId"), jsonBody(event)));
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
