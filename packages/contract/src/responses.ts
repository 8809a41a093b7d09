import { z } from "zod";
import { JOB_RECENT_RUNS } from "./limits.js";
import {
  Delivery,
  DstPolicy,
  JobStatus,
  LambdaInvocation,
  MissedRunPolicy,
  OverlapPolicy,
  RunStatus,
} from "./statuses.js";

/**
 * Every response body of the API, defined once (issue 16). The server's views and use cases
 * (lambdas/core) are typed by these schemas (a field they return that is not here fails the type check), the OpenAPI
 * document is generated from them (lambdas/handlers/openapi.ts), the worker SDK parses leases
 * with them, and the integration tests check every body the handlers return against the
 * generated document.
 *
 * Objects stay open in the document (clients should ignore fields they do not know, so the API
 * can add fields); the tests read them as closed.
 */
const instant = z.string().meta({ example: "2026-11-02T09:00:00Z" });
const values = <T extends Record<string, string>>(object: T) =>
  Object.values(object) as [T[keyof T], ...T[keyof T][]];

export const errorResponse = z
  .object({
    error: z.object({
      code: z.string().meta({ example: "ValidationError" }),
      message: z.string(),
      field: z.string().optional().meta({ description: "The offending input, as a dotted path" }),
    }),
  })
  .meta({ id: "Error" });
export type ErrorResponse = z.output<typeof errorResponse>;

/** What API Gateway (or the local gateway) answers for a request it refuses before a handler. */
export const gatewayRefusal = z.object({ message: z.string() });

const runFields = {
  runId: z.string(),
  runKey: z.string().meta({ description: "jobId@scheduledFor: use it as an idempotency key downstream" }),
  scheduledFor: instant,
  status: z.enum(values(RunStatus)),
  attempt: z.int(),
  fence: z.int(),
  startedAt: instant.optional(),
  leaseExpiresAt: instant.optional(),
  retryAt: instant
    .optional()
    .meta({ description: "A run waiting to retry: not started again before this instant" }),
  finishedAt: instant.optional(),
  error: z.string().optional().meta({ description: "Last error, or why the run was missed" }),
  missedCount: z.int().optional().meta({
    description:
      "On a missed record that stands for a long backlog (a long pause or outage): how many firings, from scheduledFor through missedThrough",
  }),
  missedThrough: instant
    .optional()
    .meta({ description: "The last firing a backlog's missed record stands for" }),
  origin: z.enum(["manual", "backfill"]).optional().meta({
    description: "A run asked for by hand: manual (trigger) or backfill; absent for the schedule's own runs",
  }),
  replays: z.int().optional().meta({
    description: "How often it was replayed (from the dead letters, or re-run by a resume); absent if never",
  }),
  replayedAt: instant.optional().meta({ description: "The last replay's instant" }),
  replayedBy: z.string().optional().meta({ description: "Who asked for the last replay" }),
  failedAttempts: z
    .array(
      z.object({
        attempt: z.int(),
        fence: z.int(),
        startedAt: instant.optional(),
        failedAt: instant,
        error: z.string().meta({ description: "The error's first 200 characters" }),
      }),
    )
    .optional()
    .meta({
      description:
        "Earlier attempts that failed and were retried, oldest first (the last 10); the run's own fields are its latest attempt's. Not listed: an attempt whose lease lapsed or was given back, and the attempt that ended a round before a replay. On a job's runs, not in the dead-letter listing",
    }),
};
export const runResponse = z.object(runFields).meta({ id: "Run" });
export type RunResponse = z.output<typeof runResponse>;

export const deadLetterResponse = z
  .object({
    ...runFields,
    jobId: z.string(),
    type: z.string(),
    deadLetteredAt: instant.optional(),
    replays: z.int().meta({ description: "How often it was replayed before" }),
  })
  .meta({ id: "DeadLetter" });
export type DeadLetterResponse = z.output<typeof deadLetterResponse>;

const scheduleFields = {
  runAt: instant.optional(),
  cron: z.string().optional(),
  timeZone: z.string().optional(),
  dstPolicy: z.enum(values(DstPolicy)).optional(),
  interval: z.object({ every: z.string() }).optional(),
  startAt: instant.optional(),
  endAt: instant.optional(),
  jitter: z.string().optional().meta({ description: "The jitter window, an ISO 8601 duration" }),
};
export const scheduleResponse = z.object(scheduleFields);
export type ScheduleResponse = z.output<typeof scheduleResponse>;

/** A push job's target, as stored and as answered: one of the three kinds. */
export const targetResponse = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("https"), url: z.string(), timeoutSeconds: z.int(), concurrency: z.int() }),
  z.object({
    kind: z.literal("lambda"),
    functionArn: z.string(),
    roleArn: z.string(),
    // Jobs stored before the choice was offered are invoked synchronously, as they always were.
    invocation: z.enum(values(LambdaInvocation)).default(LambdaInvocation.Sync),
  }),
  z.object({ kind: z.literal("sqs"), queueUrl: z.string(), roleArn: z.string() }),
]);

const jobSummaryFields = {
  jobId: z.string(),
  type: z.string(),
  status: z.enum(values(JobStatus)),
  ...scheduleFields,
  nextRunAt: instant.optional(),
  createdAt: instant,
  updatedAt: instant,
};
export const jobSummaryResponse = z.object(jobSummaryFields).meta({ id: "JobSummary" });
export type JobSummaryResponse = z.output<typeof jobSummaryResponse>;

export const jobResponse = z
  .object({
    ...jobSummaryFields,
    payload: z.unknown(),
    missedRuns: z.enum(values(MissedRunPolicy)),
    overlapPolicy: z.enum(values(OverlapPolicy)),
    delivery: z.enum(values(Delivery)),
    target: targetResponse
      .optional()
      .meta({ description: "Push jobs: where the scheduler delivers each run (the type is @ and its kind)" }),
    labels: z.record(z.string(), z.string()),
    maxLateness: z.string().optional(),
    maxAttempts: z.int(),
    retry: z.object({ base: z.string(), cap: z.string() }),
    leaseSeconds: z.int(),
    idempotencyKey: z.string().optional(),
    importedFrom: z
      .string()
      .optional()
      .meta({ description: "The job's id in the deployment it was exported from, if it was imported" }),
    createdBy: z.string(),
    version: z.int().meta({
      description:
        "The definition's version, also the ETag: one more with every change a caller makes (update, pause, resume, cancel)",
    }),
    pauseReason: z.string().optional().meta({ description: "While paused: the reason given to pause" }),
    audit: z.array(
      z.object({
        action: z.string(),
        by: z.string(),
        at: instant,
        reason: z.string().optional(),
        fields: z.array(z.string()).optional().meta({ description: "The fields an update changed" }),
      }),
    ),
    runs: z.array(runResponse).meta({
      description: `The ${JOB_RECENT_RUNS} most recent runs, newest first (GET .../runs pages through all)`,
    }),
  })
  .meta({ id: "Job" });
export type JobResponse = z.output<typeof jobResponse>;

export const backfillResponse = z
  .object({
    from: instant,
    to: instant,
    firings: z.int().meta({ description: "Firings in the range (before the job's next run)" }),
    created: z.int().meta({ description: "Firings that had no run and got one" }),
    rerun: z.int().meta({ description: "Firings recorded missed that run now" }),
    existing: z.int().meta({ description: "Firings whose run exists: left as they are" }),
  })
  .meta({ id: "BackfillResult" });
export type BackfillResponse = z.output<typeof backfillResponse>;

export const webhookSecretResponse = z
  .object({
    secret: z.string().optional().meta({
      description:
        "Only in the answer that created it, never again: `whsec_` and base64, for a Standard Webhooks verifier",
    }),
    createdAt: instant,
    previousValidUntil: instant.optional().meta({
      description: "After a rotation: deliveries are signed with the previous secret as well until then",
    }),
  })
  .meta({ id: "WebhookSecret" });
export type WebhookSecretResponse = z.output<typeof webhookSecretResponse>;

export const createJobResponse = z.object({ jobId: z.string(), nextRunAt: instant.optional() });
export type CreateJobResponse = z.output<typeof createJobResponse>;

/** One item of a bulk create: 201 created, 200 found (idempotent), or its own 4xx (or 500). */
export const createJobsItemResponse = z
  .object({
    index: z.number().int().meta({ description: "The item's place in the request's jobs, from 0" }),
    status: z
      .number()
      .int()
      .meta({ description: "201 created, 200 idempotent repeat, else the item's error status" }),
    jobId: z.string().optional(),
    nextRunAt: instant.optional(),
    error: errorResponse.shape.error
      .optional()
      .meta({ description: "Why this item was refused; field names it as jobs.<index>.<field>" }),
    retryAfter: z
      .number()
      .int()
      .optional()
      .meta({ description: "A quota's 429: seconds to wait before sending this item again" }),
  })
  .meta({ id: "CreateJobsItem" });
export type CreateJobsItemResponse = z.output<typeof createJobsItemResponse>;
export const createJobsResponse = z
  .object({
    created: z.number().int(),
    existing: z.number().int(),
    failed: z.number().int(),
    results: z.array(createJobsItemResponse),
  })
  .meta({ id: "CreateJobsResult" });
export type CreateJobsResponse = z.output<typeof createJobsResponse>;

export const jobsPageResponse = z.object({
  jobs: z.array(jobSummaryResponse),
  cursor: z.string().optional(),
});
export type JobsPageResponse = z.output<typeof jobsPageResponse>;
export const runsPageResponse = z.object({ runs: z.array(runResponse), cursor: z.string().optional() });
export type RunsPageResponse = z.output<typeof runsPageResponse>;
export const deadLettersPageResponse = z.object({
  deadLetters: z.array(deadLetterResponse),
  cursor: z.string().optional(),
});
export type DeadLettersPageResponse = z.output<typeof deadLettersPageResponse>;

export const replayAllResponse = z.object({
  replayed: z.int(),
  skippedPaused: z.int().meta({ description: "Dead letters of paused jobs, left as they are" }),
  complete: z.boolean().meta({ description: "false: the time budget ran out first; call again" }),
});
export type ReplayAllResponse = z.output<typeof replayAllResponse>;

export const leaseResponse = z
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
export type Lease = z.output<typeof leaseResponse>;
export const leasesResponse = z.array(leaseResponse);

/**
 * Where an idle worker waits for work without a request held open (decision 0049): its lanes,
 * long-polled in SQS with credentials that reach only them, and asked for a lease when one
 * holds a message. `listen` absent: poll the lease route as before (`reason` says why).
 */
export const laneListenResponse = z
  .object({
    lanes: z.array(z.object({ tenant: z.string(), type: z.string(), queueUrl: z.string() })),
    listen: z
      .object({
        region: z.string(),
        endpoint: z.string().optional().meta({ description: "Only against the local emulator" }),
        credentials: z.object({
          accessKeyId: z.string(),
          secretAccessKey: z.string(),
          sessionToken: z.string().optional(),
        }),
        expiresAt: instant.meta({ description: "Ask again before this: the credentials and lanes lapse" }),
        peekVisibilitySeconds: z.int().meta({
          description:
            "Receive with this visibility timeout and at most one message: a peek, then ask for a lease at once",
        }),
      })
      .optional(),
    reason: z.string().optional(),
  })
  .meta({ id: "LaneListen" });
export type LaneListenResponse = z.output<typeof laneListenResponse>;

export const completionResponse = z
  .object({
    runId: z.string(),
    status: z.enum(["succeeded", "retrying", "dead-lettered"]),
    retryAt: instant.optional().meta({ description: "When a retry will be leased" }),
  })
  .meta({ id: "CompletionResult" });
export type CompletionResult = z.output<typeof completionResponse>;

export const heartbeatResponse = z
  .object({ runId: z.string(), fence: z.int(), leaseExpiresAt: instant })
  .meta({ id: "HeartbeatResult" });
export type HeartbeatResult = z.output<typeof heartbeatResponse>;

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
            error: errorResponse.shape.error.optional().meta({ description: "With any other status" }),
          })
          .meta({ id: `${id}Item` }),
      ),
    })
    .meta({ id, description: "One result per item, in the order of the request" });
}
export const completionsResponse = itemResults(completionResponse, "CompletionResults");
export type CompletionsResponse = z.output<typeof completionsResponse>;
export const heartbeatsResponse = itemResults(heartbeatResponse, "HeartbeatResults");
export type HeartbeatsResponse = z.output<typeof heartbeatsResponse>;

export const previewRunResponse = z.object({
  at: instant,
  local: z.string(),
  dst: z.enum(["moved", "merged", "repeated", "second-occurrence"]).optional().meta({
    description:
      "moved: the local time was skipped by DST and runs at the end of the gap; merged: several local times run as one; repeated: the local time occurs twice and this is its first pass; second-occurrence: its second pass (dstPolicy every-occurrence)",
  }),
  scheduledLocal: z
    .array(z.string())
    .optional()
    .meta({ description: "The local times the schedule named, when DST moved or merged them" }),
  firing: instant.optional().meta({ description: "With jitter: the firing this run stands for" }),
  jitter: z.string().optional().meta({ description: "With jitter: the run's offset after its firing" }),
  skippedLocal: z.array(z.string()).optional().meta({
    description: "Local times a DST gap skipped just before this run, not run (dstPolicy skip-gap)",
  }),
});
export type PreviewRun = z.output<typeof previewRunResponse>;
export const previewResponse = z
  .object({ timeZone: z.string(), from: instant, runs: z.array(previewRunResponse) })
  .meta({ id: "Preview" });
export type Preview = z.output<typeof previewResponse>;

export const updateJobResponse = z
  .object({
    job: jobResponse,
    changed: z
      .array(z.string())
      .meta({ description: "The fields whose value changed (none: nothing was written)" }),
    nextRunsBefore: z
      .array(previewRunResponse)
      .meta({ description: "The next runs the job had before the change" }),
    nextRunsAfter: z.array(previewRunResponse).meta({ description: "The next runs it has now" }),
  })
  .meta({ id: "UpdateJobResult" });
export type UpdateJobResponse = z.output<typeof updateJobResponse>;
