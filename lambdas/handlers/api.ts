import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps, type HandlerDeps } from "../adapters/scheduler-deps";
import { previewSchedule } from "../core/schedule/preview";
import { createJob } from "../core/use-cases/create-job";
import { getJob } from "../core/use-cases/get-job";
import { httpErrors } from "./http/error-middleware";
import { callerOf, type HttpEvent, jsonBody, pathParameter } from "./http/request";
import { json } from "./http/responses";
import { dispatch } from "./http/router";

/** The tenant-facing API (/api/*): thin glue from HTTP to the use cases. */
export function createApiHandler(deps: HandlerDeps) {
  const route = dispatch({
    "POST /api/v1/jobs": async (event) => {
      const result = await createJob(deps, callerOf(event), jsonBody(event));
      return json(result.created ? 201 : 200, { jobId: result.jobId, nextRunAt: result.nextRunAt });
    },
    "GET /api/v1/jobs/{jobId}": async (event) =>
      json(200, await getJob(deps, callerOf(event), pathParameter(event, "jobId"))),
    "GET /api/v1/schedules/preview": async (event) => {
      callerOf(event);
      return json(200, previewSchedule(event.queryStringParameters ?? {}, deps.clock.now()));
    },
  });
  return middy<HttpEvent>().use(httpErrors(deps.log)).handler(route);
}

let lazy: ReturnType<typeof createApiHandler> | undefined;

/** The Lambda entry point; SDK clients are created once per container, on first use. */
export const handler = (event: HttpEvent, context: Parameters<ReturnType<typeof createApiHandler>>[1]) => {
  lazy ??= createApiHandler(createSchedulerDeps(configFromEnvironment()));
  return lazy(event, context);
};
