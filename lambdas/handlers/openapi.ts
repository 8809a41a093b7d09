import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { previewQuery } from "../core/schedule/preview";
import {
  completeBatchRequest,
  completeRequest,
  createJobRequest,
  heartbeatBatchRequest,
  heartbeatRequest,
  leaseRequest,
  listJobsQuery,
  pageQuery,
} from "../core/schemas";
import { ROUTES } from "../definitions/routes";

/**
 * The OpenAPI 3.1 document, generated from the same zod schemas that validate requests, so
 * the document cannot promise a field the API refuses. Served at GET /api/v1/openapi.json and
 * linted in CI (npm run lint:openapi).
 */
const instant = z.string().meta({ example: "2026-11-02T09:00:00Z" });
const errorBody = z
  .object({
    error: z.object({
      code: z.string().meta({ example: "ValidationError" }),
      message: z.string(),
      field: z.string().optional().meta({ description: "The offending input, as a dotted path" }),
    }),
  })
  .meta({ id: "Error" });

const run = z
  .object({
    runId: z.string(),
    runKey: z.string().meta({ description: "jobId@scheduledFor: use it as an idempotency key downstream" }),
    scheduledFor: instant,
    status: z.enum(["pending", "leased", "succeeded", "dead-lettered", "cancelled", "missed"]),
    attempt: z.int(),
    fence: z.int(),
    startedAt: instant.optional(),
    leaseExpiresAt: instant.optional(),
    finishedAt: instant.optional(),
    error: z.string().optional().meta({ description: "Last error, or why the run was missed" }),
    missedCount: z.int().optional().meta({
      description:
        "On a missed record that stands for a long backlog (a long pause or outage): how many firings, from scheduledFor through missedThrough",
    }),
    missedThrough: instant
      .optional()
      .meta({ description: "The last firing a backlog's missed record stands for" }),
  })
  .meta({ id: "Run" });

const deadLetter = run
  .extend({
    jobId: z.string(),
    type: z.string(),
    deadLetteredAt: instant.optional(),
    replays: z.int().meta({ description: "How often it was replayed before" }),
  })
  .meta({ id: "DeadLetter" });

const scheduleFields = {
  runAt: instant.optional(),
  cron: z.string().optional(),
  timeZone: z.string().optional(),
  interval: z.object({ every: z.string() }).optional(),
  startAt: instant.optional(),
  endAt: instant.optional(),
};
const jobSummary = z
  .object({
    jobId: z.string(),
    type: z.string(),
    status: z.enum(["active", "paused", "cancelled", "completed"]),
    ...scheduleFields,
    nextRunAt: instant.optional(),
    createdAt: instant,
    updatedAt: instant,
  })
  .meta({ id: "JobSummary" });
const job = jobSummary
  .extend({
    payload: z.unknown(),
    missedRuns: z.enum(["catch-up", "run-once", "skip"]),
    maxLateness: z.string().optional(),
    maxAttempts: z.int(),
    retry: z.object({ base: z.string(), cap: z.string() }),
    leaseSeconds: z.int(),
    idempotencyKey: z.string().optional(),
    createdBy: z.string(),
    audit: z.array(z.object({ action: z.string(), by: z.string(), at: instant })),
    runs: z.array(run).meta({ description: "The most recent runs, newest first" }),
  })
  .meta({ id: "Job" });
const lease = z
  .object({
    runId: z.string(),
    runKey: z.string(),
    jobId: z.string(),
    type: z.string(),
    scheduledFor: instant,
    startAt: instant.meta({
      description:
        "Hold the run until this instant and start it then, never before: its scheduledFor (or a retry's " +
        "time; now if that has passed). Leases are handed over as soon as they are granted, up to about 26 s ahead.",
    }),
    attempt: z.int(),
    fence: z.int(),
    leaseExpiresAt: instant.meta({
      description:
        "startAt plus the job's lease: a run not started by then must not be started (it runs again elsewhere)",
    }),
    final: z.boolean().meta({
      description: "Whether this is the job's last run; echo it in the completion to save the server a read",
    }),
    payload: z.unknown(),
  })
  .meta({ id: "Lease" });

const completionResult = z
  .object({
    runId: z.string(),
    status: z.enum(["succeeded", "retrying", "dead-lettered"]),
    retryAt: instant.optional().meta({ description: "When a retry will be leased" }),
  })
  .meta({ id: "CompletionResult" });
const heartbeatResult = z
  .object({ runId: z.string(), fence: z.int(), leaseExpiresAt: instant })
  .meta({ id: "HeartbeatResult" });

/** A batched call's per-item answer: the item's own HTTP status and its result or error. */
function itemResults<T extends z.ZodType>(result: T, id: string) {
  return z
    .object({
      results: z.array(
        z
          .object({
            runId: z.string(),
            status: z.int().meta({
              description:
                "This item's status, as the one-run route would answer: 200, 400 (bad item), 404, 409 (stale fence), 500 (retry the item)",
            }),
            result: result.optional().meta({ description: "With status 200" }),
            error: errorBody.shape.error.optional().meta({ description: "With any other status" }),
          })
          .meta({ id: `${id}Item` }),
      ),
    })
    .meta({ id, description: "One result per item, in the order of the request" });
}
const preview = z
  .object({
    timeZone: z.string(),
    from: instant,
    runs: z.array(
      z.object({
        at: instant,
        local: z.string(),
        dst: z.enum(["moved", "merged", "repeated"]).optional(),
        scheduledLocal: z.array(z.string()).optional(),
      }),
    ),
  })
  .meta({ id: "Preview" });

const jsonContent = (schema: z.ZodType, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const errors = {
  400: jsonContent(errorBody, "The request is invalid; error.field names the input"),
  403: jsonContent(z.object({ message: z.string() }), "Unsigned, wrongly signed, expired, or not allowed"),
};
const notFound = { 404: jsonContent(errorBody, "No such job, or it belongs to another tenant") };
const workerErrors = {
  ...errors,
  403: jsonContent(
    z.union([z.object({ message: z.string() }), errorBody]),
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
      201: jsonContent(z.object({ jobId: z.string(), nextRunAt: instant.optional() }), "The job is stored"),
      200: jsonContent(z.object({ jobId: z.string(), nextRunAt: instant.optional() }), "Idempotent repeat"),
      ...errors,
      409: jsonContent(errorBody, "The idempotency key was used with a different body"),
    },
  },
  "GET /api/v1/jobs": {
    summary: "The caller's jobs, newest first",
    request: { query: listJobsQuery },
    responses: {
      200: jsonContent(z.object({ jobs: z.array(jobSummary), cursor: z.string().optional() }), "A page"),
      ...errors,
    },
  },
  "GET /api/v1/jobs/{jobId}": {
    summary: "A job: definition, status, next run, recent runs, audit trail",
    request: { params: jobIdParam },
    responses: { 200: jsonContent(job, "The job"), ...errors, ...notFound },
  },
  "DELETE /api/v1/jobs/{jobId}": {
    summary: "Cancel a job; no new run starts after the answer, runs already leased may finish",
    request: { params: jobIdParam },
    responses: { 200: jsonContent(job, "The cancelled job"), ...errors, ...notFound, ...conflict },
  },
  "GET /api/v1/jobs/{jobId}/runs": {
    summary: "A job's run history, newest first",
    request: { params: jobIdParam, query: pageQuery },
    responses: {
      200: jsonContent(z.object({ runs: z.array(run), cursor: z.string().optional() }), "A page"),
      ...errors,
      ...notFound,
    },
  },
  "POST /api/v1/jobs/{jobId}/pause": {
    summary: "Pause a job: it creates no runs until resumed",
    request: { params: jobIdParam },
    responses: { 200: jsonContent(job, "The paused job"), ...errors, ...notFound, ...conflict },
  },
  "POST /api/v1/jobs/{jobId}/resume": {
    summary: "Resume a paused job; its missed-run policy handles firings that fell in the pause",
    request: { params: jobIdParam },
    responses: { 200: jsonContent(job, "The resumed job"), ...errors, ...notFound, ...conflict },
  },
  "GET /api/v1/schedules/preview": {
    summary: "The next runs of a schedule, marked where DST moved, merged or repeated them",
    request: { query: previewQuery },
    responses: { 200: jsonContent(preview, "The next runs"), ...errors },
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
        z.array(lease),
        "Leased runs, possibly none: only runs of the tenants the caller's worker binding names. " +
          "Fewer than max when their payloads would not fit the response (about 6 MB in all; the " +
          "others stay queued for the next request, untouched). Answered within about 22 s, whatever waitSeconds.",
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
        completionResult,
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
      200: jsonContent(heartbeatResult, "The lease's new end"),
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
        itemResults(completionResult, "CompletionResults"),
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
        itemResults(heartbeatResult, "HeartbeatResults"),
        "Each item answered as POST /internal/leases/{runId}/heartbeat would",
      ),
      ...workerErrors,
    },
  },
  "GET /api/v1/dead-letters": {
    summary: "The caller's dead-lettered runs with their last error, most recent first",
    request: { query: pageQuery },
    responses: {
      200: jsonContent(
        z.object({ deadLetters: z.array(deadLetter), cursor: z.string().optional() }),
        "A page",
      ),
      ...errors,
    },
  },
  "POST /api/v1/dead-letters/replay": {
    summary: "Replay every one of the caller's dead letters",
    responses: {
      200: jsonContent(
        z.object({
          replayed: z.int(),
          skippedPaused: z.int().meta({ description: "Dead letters of paused jobs, left as they are" }),
          complete: z.boolean().meta({ description: "false: the time budget ran out first; call again" }),
        }),
        "How many were replayed, and whether that was all",
      ),
      ...errors,
    },
  },
  "POST /api/v1/dead-letters/{runId}/replay": {
    summary: "Replay one dead letter: same run key, attempts reset, replay counted",
    request: { params: z.object({ runId: z.string() }) },
    responses: {
      200: jsonContent(deadLetter, "The run, pending again"),
      ...errors,
      404: jsonContent(errorBody, "No such dead letter"),
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
