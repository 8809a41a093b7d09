import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import {
  backfillRequest,
  backfillResponse,
  completeBatchRequest,
  completeRequest,
  completionResponse,
  completionsResponse,
  createJobRequest,
  createJobResponse,
  createJobsRequest,
  createJobsResponse,
  deadLetterResponse,
  deadLettersPageResponse,
  errorResponse,
  gatewayRefusal,
  heartbeatBatchRequest,
  heartbeatRequest,
  heartbeatResponse,
  heartbeatsResponse,
  jobResponse,
  jobsPageResponse,
  laneListenRequest,
  laneListenResponse,
  leaseRequest,
  leasesResponse,
  listJobsQuery,
  MAX_BATCH_JOBS,
  pageQuery,
  pauseRequest,
  previewResponse,
  replayAllResponse,
  runResponse,
  runsPageResponse,
  triggerRequest,
  updateJobRequest,
  updateJobResponse,
  webhookSecretResponse,
} from "@jobsched/contract";
import { z } from "zod";
import { previewQuery } from "../core/schedule/preview";
import { ROUTES } from "../definitions/routes";

/**
 * The OpenAPI 3.1 document, generated from the zod schemas that validate requests
 * (the contract's requests.ts) and that type every response (its responses.ts), so the document cannot
 * promise a field the API refuses, nor leave out one it returns. Served at GET /api/v1/openapi.json and
 * linted in CI (npm run lint:openapi).
 */
const errorBody = errorResponse;
const jsonContent = (schema: z.ZodType, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const errors = {
  400: jsonContent(errorBody, "The request is invalid; error.field names the input"),
  403: jsonContent(gatewayRefusal, "Unsigned, wrongly signed, expired, or not allowed"),
  429: jsonContent(
    gatewayRefusal,
    "Throttled by the API stage (jobsched:apiRateLimit / apiBurstLimit): retry with backoff",
  ),
};
const notFound = { 404: jsonContent(errorBody, "No such job, or it belongs to another tenant") };
const workerErrors = {
  ...errors,
  403: jsonContent(
    z.union([gatewayRefusal, errorBody]),
    "Unsigned, wrongly signed, expired, or not a worker: the caller's principal has no worker binding (a tenant's never has)",
  ),
};
const noSuchRun = {
  404: jsonContent(errorBody, "No such run, or it belongs to a tenant this worker does not serve"),
};
const conflict = { 409: jsonContent(errorBody, "The job's state does not allow this") };
const jobIdParam = z.object({ jobId: z.string().meta({ example: "j_7hq2k4m9x2c8v5b1n0zq" }) });

interface Operation {
  readonly summary: string;
  readonly request?: Record<string, unknown>;
  readonly responses: Record<number, unknown>;
}

const OPERATIONS: Readonly<Record<(typeof ROUTES)[number]["method" | "path"] | string, Operation>> = {
  "POST /api/v1/jobs": {
    summary: "Schedule a job: once (runAt), by cron in a time zone, or every interval",
    request: { body: { content: { "application/json": { schema: createJobRequest } } } },
    responses: {
      201: jsonContent(createJobResponse, "The job is stored"),
      200: jsonContent(createJobResponse, "Idempotent repeat"),
      ...errors,
      409: jsonContent(errorBody, "The idempotency key was used with a different body"),
      429: {
        ...jsonContent(
          z.union([errorBody, gatewayRefusal]),
          "A tenant quota refuses the create (error.field names it: quota.createsPerSecond, quota.activeJobs, type), " +
            "or the API stage throttled the call; nothing is stored. Retry after Retry-After seconds.",
        ),
        headers: z.object({ "retry-after": z.string().meta({ description: "Seconds to wait (quotas)" }) }),
      },
    },
  },
  "POST /api/v1/jobs/batch": {
    summary:
      "Schedule 1-100 jobs in one request (bulk create): each item is created as POST /api/v1/jobs would, with a result of its own",
    request: {
      body: {
        content: {
          // Documented with each item's schema; the API checks items one by one (a bad item is
          // that item's 400, not the request's).
          "application/json": {
            schema: createJobsRequest.extend({
              jobs: z.array(createJobRequest).min(1).max(MAX_BATCH_JOBS),
            }),
          },
        },
      },
    },
    responses: {
      200: jsonContent(
        createJobsResponse,
        "A result per item, in order: 201 created, 200 idempotent repeat, or the item's own error (its field is jobs.<index>.<field>); one item's refusal never fails another",
      ),
      ...errors,
    },
  },
  "GET /api/v1/jobs": {
    summary: "The caller's jobs, newest first",
    request: { query: listJobsQuery },
    responses: {
      200: jsonContent(jobsPageResponse, "A page"),
      ...errors,
    },
  },
  "GET /api/v1/jobs/{jobId}": {
    summary: "A job: definition, status, next run, recent runs, audit trail",
    request: { params: jobIdParam },
    responses: {
      200: {
        ...jsonContent(jobResponse, "The job"),
        headers: z.object({ etag: z.string().meta({ description: "The job's version, for If-Match" }) }),
      },
      ...errors,
      ...notFound,
    },
  },
  "PATCH /api/v1/jobs/{jobId}": {
    summary:
      "Change a job in place (a JSON merge patch: fields left out are kept, null clears one); id, type and history stay",
    request: {
      params: jobIdParam,
      headers: z.object({
        "if-match": z.string().optional().meta({
          description: 'The ETag of the version the change was made against ("3"); another version is a 412',
        }),
      }),
      body: { content: { "application/json": { schema: updateJobRequest } } },
    },
    responses: {
      200: {
        ...jsonContent(
          updateJobResponse,
          "The job as it now is, what changed, and its next runs before and after",
        ),
        headers: z.object({ etag: z.string().meta({ description: "The job's new version" }) }),
      },
      ...errors,
      ...notFound,
      ...conflict,
      412: jsonContent(errorBody, "If-Match names a version that is no longer the job's: read it again"),
    },
  },
  "DELETE /api/v1/jobs/{jobId}": {
    summary: "Cancel a job; no new run starts after the answer, runs already leased may finish",
    request: { params: jobIdParam },
    responses: { 200: jsonContent(jobResponse, "The cancelled job"), ...errors, ...notFound, ...conflict },
  },
  "GET /api/v1/jobs/{jobId}/runs": {
    summary: "A job's run history, newest first",
    request: { params: jobIdParam, query: pageQuery },
    responses: {
      200: jsonContent(runsPageResponse, "A page"),
      ...errors,
      ...notFound,
    },
  },
  "POST /api/v1/jobs/{jobId}/pause": {
    summary: "Pause a job: it creates no runs until resumed",
    request: {
      params: jobIdParam,
      body: { required: false, content: { "application/json": { schema: pauseRequest } } },
    },
    responses: { 200: jsonContent(jobResponse, "The paused job"), ...errors, ...notFound, ...conflict },
  },
  "POST /api/v1/jobs/{jobId}/resume": {
    summary: "Resume a paused job; its missed-run policy handles firings that fell in the pause",
    request: { params: jobIdParam },
    responses: { 200: jsonContent(jobResponse, "The resumed job"), ...errors, ...notFound, ...conflict },
  },
  "POST /api/v1/jobs/{jobId}/trigger": {
    summary: "Run an active job now, beside its schedule: one run under its own run key",
    request: {
      params: jobIdParam,
      body: { required: false, content: { "application/json": { schema: triggerRequest } } },
    },
    responses: {
      201: jsonContent(runResponse, "The run, pending: it is on its way to a worker"),
      ...errors,
      ...notFound,
      ...conflict,
    },
  },
  "POST /api/v1/jobs/{jobId}/backfill": {
    summary:
      "Run an active job's past firings in a range (at most 1,000), once per firing: firings without a run, and firings recorded missed",
    request: { params: jobIdParam, body: { content: { "application/json": { schema: backfillRequest } } } },
    responses: {
      200: jsonContent(backfillResponse, "What the range held"),
      ...errors,
      ...notFound,
      ...conflict,
    },
  },
  "GET /api/v1/schedules/preview": {
    summary: "The next runs of a schedule, marked where DST moved, merged or repeated them",
    request: { query: previewQuery },
    responses: { 200: jsonContent(previewResponse, "The next runs"), ...errors },
  },
  "POST /api/v1/webhook-secret": {
    summary:
      "Create your webhook signing secret, or rotate it: the new one signs every delivery from this answer on, the previous one too for a day; at most once a minute. The answer is the only time it is shown",
    responses: {
      201: jsonContent(webhookSecretResponse, "Created; `secret` is shown this once"),
      200: jsonContent(webhookSecretResponse, "Rotated; `secret` is shown this once"),
      ...errors,
      ...conflict,
      429: {
        ...jsonContent(
          z.union([errorBody, gatewayRefusal]),
          "Rotated less than a minute ago (error.field webhook-secret), or the API stage throttled the call; nothing changed. Retry after Retry-After seconds.",
        ),
        headers: z.object({ "retry-after": z.string().meta({ description: "Seconds to wait (rotations)" }) }),
      },
    },
  },
  "GET /api/v1/webhook-secret": {
    summary:
      "When your webhook secret was made, and until when the previous one still signs (never the secret)",
    responses: { 200: jsonContent(webhookSecretResponse, "The secret's dates"), ...errors, ...notFound },
  },
  "GET /api/v1/openapi.json": {
    summary: "This document",
    responses: { 200: jsonContent(z.record(z.string(), z.unknown()), "OpenAPI 3.1"), ...errors },
  },
  "POST /internal/leases": {
    summary:
      "Workers: lease due runs of some types, of the tenants the worker serves; the lease is the run's fence",
    request: { body: { content: { "application/json": { schema: leaseRequest } } } },
    responses: {
      200: jsonContent(
        leasesResponse,
        "Leased runs, possibly none: only runs of the tenants the caller's worker binding names. " +
          "Fewer than max when their payloads would not fit the response (about 6 MB in all; the " +
          "others stay queued for the next request, untouched). Answered within about 22 s, whatever waitSeconds.",
      ),
      ...workerErrors,
    },
  },
  "POST /internal/lanes": {
    summary:
      "Workers: where to wait for work while idle, without a request held open: the worker's lanes and credentials that may only receive from them (decision 0049)",
    request: { body: { content: { "application/json": { schema: laneListenRequest } } } },
    responses: {
      200: jsonContent(
        laneListenResponse,
        "The lanes of every tenant the caller serves for each type asked for, made if missing, with an hour's credentials " +
          "(ReceiveMessage on those lanes only). Long-poll them with the given visibility and at most one message, and ask " +
          "POST /internal/leases when one holds a message. No `listen`: poll POST /internal/leases (`reason` says why).",
      ),
      ...workerErrors,
    },
  },
  "POST /internal/leases/{runId}/complete": {
    summary: "Workers: record a run's outcome with the lease's fence",
    request: {
      params: z.object({ runId: z.string() }),
      body: { content: { "application/json": { schema: completeRequest } } },
    },
    responses: {
      200: jsonContent(
        completionResponse,
        "Recorded: succeeded, retrying after the job's backoff, or dead-lettered (a repeat of the same fence and result gets the same answer)",
      ),
      ...workerErrors,
      ...noSuchRun,
      409: jsonContent(errorBody, "The fence no longer holds the lease"),
    },
  },
  "POST /internal/leases/{runId}/heartbeat": {
    summary: "Workers: extend a live lease by its job's lease length",
    request: {
      params: z.object({ runId: z.string() }),
      body: { content: { "application/json": { schema: heartbeatRequest } } },
    },
    responses: {
      200: jsonContent(heartbeatResponse, "The lease's new end"),
      ...workerErrors,
      ...noSuchRun,
      409: jsonContent(errorBody, "The fence no longer holds a live lease"),
    },
  },
  "POST /internal/completions": {
    summary: "Workers: record many runs' outcomes in one call, each with its lease's fence",
    request: { body: { content: { "application/json": { schema: completeBatchRequest } } } },
    responses: {
      200: jsonContent(
        completionsResponse,
        "Each item answered as POST /internal/leases/{runId}/complete would (same fence rules, repeats " +
          "answered the same); an item's failure never fails the others",
      ),
      ...workerErrors,
    },
  },
  "POST /internal/heartbeats": {
    summary: "Workers: extend many live leases in one call",
    request: { body: { content: { "application/json": { schema: heartbeatBatchRequest } } } },
    responses: {
      200: jsonContent(
        heartbeatsResponse,
        "Each item answered as POST /internal/leases/{runId}/heartbeat would",
      ),
      ...workerErrors,
    },
  },
  "GET /api/v1/dead-letters": {
    summary: "The caller's dead-lettered runs with their last error, most recent first",
    request: { query: pageQuery },
    responses: {
      200: jsonContent(deadLettersPageResponse, "A page"),
      ...errors,
    },
  },
  "POST /api/v1/dead-letters/replay": {
    summary: "Replay every one of the caller's dead letters",
    responses: {
      200: jsonContent(replayAllResponse, "How many were replayed, and whether that was all"),
      ...errors,
    },
  },
  "POST /api/v1/dead-letters/{runId}/replay": {
    summary: "Replay one dead letter: same run key, attempts reset, replay counted",
    request: { params: z.object({ runId: z.string() }) },
    responses: {
      200: jsonContent(deadLetterResponse, "The run, pending again"),
      ...errors,
      404: jsonContent(errorBody, "No such dead letter"),
      409: jsonContent(errorBody, "Its job is paused: resume the job, then replay"),
    },
  },
};

let cached: ReturnType<OpenApiGeneratorV31["generateDocument"]> | undefined;

export function openApiDocument() {
  if (cached) return cached;
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "sigv4", {
    type: "apiKey",
    name: "Authorization",
    in: "header",
    description: "AWS Signature Version 4 for execute-api (IAM auth)",
  });
  for (const route of ROUTES) {
    const key = `${route.method} ${route.path}`;
    const operation = OPERATIONS[key];
    if (!operation) throw new Error(`no OpenAPI description for ${key}`);
    registry.registerPath({
      method: route.method.toLowerCase() as "get" | "post" | "delete",
      path: route.path,
      operationId: operationId(route.method, route.path),
      tags: [route.path.startsWith("/internal/") ? "workers" : "jobs"],
      summary: operation.summary,
      security: [{ sigv4: [] }],
      ...(operation.request ? { request: operation.request } : {}),
      responses: operation.responses,
    } as Parameters<OpenAPIRegistry["registerPath"]>[0]);
  }
  cached = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "jobsched",
      version: "1.0.0",
      description: "Serverless distributed job scheduler. Every request is signed with AWS SigV4 (IAM auth).",
      license: { name: "UNLICENSED", identifier: "UNLICENSED" },
    },
    servers: [{ url: "http://127.0.0.1:8787", description: "Local runtime (npm start)" }],
    tags: [
      { name: "jobs", description: "Tenants: schedule and control jobs" },
      { name: "workers", description: "Workers: lease and complete runs" },
    ],
  });
  return cached;
}

function operationId(method: string, path: string): string {
  const words = path
    .replace(/^\/(api\/v1|internal)\//, "")
    .split("/")
    .map((part) => (part.startsWith("{") ? `by-${part.slice(1, -1)}` : part))
    .join("-")
    .replace(/[^a-zA-Z0-9]+(.)/g, (_m, c: string) => c.toUpperCase());
  return `${method.toLowerCase()}${words.charAt(0).toUpperCase()}${words.slice(1)}`;
}
