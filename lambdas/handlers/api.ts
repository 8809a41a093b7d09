import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps, type HandlerDeps } from "../adapters/scheduler-deps";
import type { Caller } from "../core/caller";
import { previewSchedule } from "../core/schedule/preview";
import { controlJob, type JobAction } from "../core/use-cases/control-job";
import { createJob } from "../core/use-cases/create-job";
import { createJobs } from "../core/use-cases/create-jobs";
import { listDeadLetters, replayAllDeadLetters, replayDeadLetter } from "../core/use-cases/dead-letters";
import { getJob } from "../core/use-cases/get-job";
import { listJobs, listRuns } from "../core/use-cases/list-jobs";
import { backfillJob, triggerJob } from "../core/use-cases/manual-runs";
import { updateJob } from "../core/use-cases/update-job";
import { rotateWebhookSecret, showWebhookSecret } from "../core/use-cases/webhook-secrets";
import { batchResponse } from "./http/batch-response";
import { httpErrors } from "./http/error-middleware";
import {
  callerOf,
  type HttpEvent,
  header,
  jsonBody,
  MAX_BATCH_BODY_BYTES,
  pathParameter,
  queryParameters,
} from "./http/request";
import { json } from "./http/responses";
import { dispatch } from "./http/router";
import { openApiDocument } from "./openapi";

/** The tenant-facing API (/api/*): thin glue from HTTP to the use cases. */
export function createApiHandler(deps: HandlerDeps) {
  // Answers that show a job carry its version as the ETag an update's If-Match names.
  const withEtag = (job: { readonly version: number }) => ({ etag: `"${job.version}"` });
  const control = (action: JobAction) => async (event: HttpEvent) => {
    const job = await controlJob(
      deps,
      callerOf(event, deps.tenantMapping),
      pathParameter(event, "jobId"),
      action,
      jsonBody(event),
    );
    return json(200, job, withEtag(job));
  };

  /** A use case on one of the caller's jobs, with the request's body, answered with `status`. */
  const onJob =
    (
      status: number,
      useCase: (deps: HandlerDeps, caller: Caller, jobId: string, body: unknown) => Promise<unknown>,
    ) =>
    async (event: HttpEvent) =>
      json(
        status,
        await useCase(
          deps,
          callerOf(event, deps.tenantMapping),
          pathParameter(event, "jobId"),
          jsonBody(event),
        ),
      );

  const route = dispatch({
    "POST /api/v1/jobs": async (event) => {
      const result = await createJob(deps, callerOf(event, deps.tenantMapping), jsonBody(event));
      return json(result.created ? 201 : 200, { jobId: result.jobId, nextRunAt: result.nextRunAt });
    },
    "POST /api/v1/jobs/batch": async (event) => {
      const caller = callerOf(event, deps.tenantMapping);
      return json(
        200,
        batchResponse(await createJobs(deps, caller, jsonBody(event, MAX_BATCH_BODY_BYTES, false))),
      );
    },
    "GET /api/v1/jobs": async (event) =>
      json(200, await listJobs(deps, callerOf(event, deps.tenantMapping), queryParameters(event))),
    "GET /api/v1/jobs/{jobId}": async (event) => {
      const job = await getJob(deps, callerOf(event, deps.tenantMapping), pathParameter(event, "jobId"));
      return json(200, job, withEtag(job));
    },
    "PATCH /api/v1/jobs/{jobId}": async (event) => {
      const updated = await updateJob(
        deps,
        callerOf(event, deps.tenantMapping),
        pathParameter(event, "jobId"),
        jsonBody(event),
        header(event, "if-match"),
      );
      return json(200, updated, withEtag(updated.job));
    },
    "DELETE /api/v1/jobs/{jobId}": control("cancel"),
    "GET /api/v1/jobs/{jobId}/runs": async (event) =>
      json(
        200,
        await listRuns(
          deps,
          callerOf(event, deps.tenantMapping),
          pathParameter(event, "jobId"),
          queryParameters(event),
        ),
      ),
    "POST /api/v1/jobs/{jobId}/pause": control("pause"),
    "POST /api/v1/jobs/{jobId}/resume": control("resume"),
    "POST /api/v1/jobs/{jobId}/trigger": onJob(201, triggerJob),
    "POST /api/v1/jobs/{jobId}/backfill": onJob(200, backfillJob),
    "GET /api/v1/schedules/preview": async (event) => {
      callerOf(event, deps.tenantMapping);
      return json(200, previewSchedule(queryParameters(event), deps.clock.now()));
    },
    "GET /api/v1/openapi.json": async () => json(200, openApiDocument()),
    "GET /api/v1/dead-letters": async (event) =>
      json(200, await listDeadLetters(deps, callerOf(event, deps.tenantMapping), queryParameters(event))),
    "POST /api/v1/dead-letters/replay": async (event) =>
      json(200, await replayAllDeadLetters(deps, callerOf(event, deps.tenantMapping))),
    "POST /api/v1/dead-letters/{runId}/replay": async (event) =>
      json(
        200,
        await replayDeadLetter(deps, callerOf(event, deps.tenantMapping), pathParameter(event, "runId")),
      ),
    "POST /api/v1/webhook-secret": async (event) => {
      const rotated = await rotateWebhookSecret(deps, callerOf(event, deps.tenantMapping));
      return json(rotated.created ? 201 : 200, rotated.body);
    },
    "GET /api/v1/webhook-secret": async (event) =>
      json(200, await showWebhookSecret(deps, callerOf(event, deps.tenantMapping))),
  });
  return middy<HttpEvent>().use(httpErrors(deps.log)).handler(route);
}

let lazy: ReturnType<typeof createApiHandler> | undefined;

/** The Lambda entry point; SDK clients are created once per container, on first use. */
export const handler = (event: HttpEvent, context: Parameters<ReturnType<typeof createApiHandler>>[1]) => {
  lazy ??= createApiHandler(createSchedulerDeps(configFromEnvironment()));
  return lazy(event, context);
};
