import { z } from "zod";
import { documentSize, utf8Length } from "./document-limits.js";
import {
  AWS_TARGET_TIMEOUT_SECONDS,
  DEFAULT_TARGET_CONCURRENCY,
  DEFAULT_TARGET_TIMEOUT_SECONDS,
  MAX_TARGET_TIMEOUT_SECONDS,
  PAYLOAD_LIMIT_BYTES,
  PUSH_TYPES,
} from "./limits.js";
import { DstPolicy, LambdaInvocation, OverlapPolicy } from "./statuses.js";

/**
 * Request bodies and query strings of the API, as zod schemas. Objects are strict: an unknown
 * field is a 400, not silently ignored, so a typo like "runat" cannot create a job that never
 * runs. The OpenAPI document is generated from these same schemas.
 */

/** Largest accepted payload, measured as UTF-8 JSON. Well under SQS and DynamoDB limits. */
export const MAX_PAYLOAD_BYTES = PAYLOAD_LIMIT_BYTES;
export const DEFAULT_MAX_ATTEMPTS = 5;
export const MAX_ATTEMPTS_LIMIT = 100;
/**
 * Lease bounds. A lease is the run's SQS message kept invisible, and SQS keeps a message
 * invisible for at most 12 hours from its receive; the lease step receives a run a few seconds
 * before it is due and counts the lease from the due instant. So the longest lease stays ten
 * minutes under 12 hours (11 h 50 min), room for that lead whatever it grows to.
 */
export const MIN_LEASE_SECONDS = 5;
export const MAX_LEASE_SECONDS = 12 * 3600 - 600;

export const jobType = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits and . _ : - only, starting with a letter or digit")
  .meta({ description: "What kind of work this is; workers lease runs by type", example: "send-invoice" });

export const isoInstant = z.iso
  .datetime({
    offset: true,
    message: "must be an ISO 8601 date-time with an offset, like 2026-11-02T09:00:00Z",
  })
  .meta({ example: "2026-11-02T09:00:00Z" });

/** A length of time: whole seconds, or an ISO 8601 duration such as PT15M. */
export const durationInput = z
  .union(
    [
      z
        .int()
        .positive()
        .max(366 * 86_400),
      z.string().min(2).max(64),
    ],
    {
      message: "must be seconds (a positive whole number) or an ISO 8601 duration like PT15M",
    },
  )
  .meta({ description: "Seconds, or an ISO 8601 duration such as PT15M", example: "PT1H" });

/** How a cron schedule runs local times that DST repeats or skips (cron only). */
export const dstPolicyField = z
  .enum(Object.values(DstPolicy) as [DstPolicy, ...DstPolicy[]])
  .optional()
  .meta({
    description:
      "cron only. first-occurrence (default): a time that occurs twice runs once, at its first occurrence, and a time skipped by a jump forward runs at the end of the gap; every-occurrence: a time that occurs twice runs in both passes; skip-gap: a skipped time does not run",
  });

/** What a run that comes due while the job's previous run is unfinished does. */
export const overlapPolicyField = z
  .enum(Object.values(OverlapPolicy) as [OverlapPolicy, ...OverlapPolicy[]])
  .meta({
    description:
      "allow (default): it starts anyway; skip: it is recorded skipped; buffer-one: it waits for the running one (one at most; further ones are skipped); cancel-previous: the running run's lease is revoked (its heartbeat and completion get 409) and this one starts",
  });

/** The delivery guarantee a job asks for. */
export const deliveryField = z.enum(["at-least-once", "at-most-once"]).meta({
  description:
    "at-least-once (default): a run whose lease lapses runs again, failures retry; at-most-once: a run is marked started before it is handed over, never leased twice (a lapsed lease is recorded lost) and never retried",
});

/** Labels: at most MAX_LABELS key/value pairs, to group jobs and find them (GET /jobs?label=). */
export const MAX_LABELS = 20;
export const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$/;
export const LABEL_VALUE = /^[A-Za-z0-9._:/@+-]{0,128}$/;
const labelKeyField = z
  .string()
  .regex(LABEL_KEY, "label keys: 1-64 of letters, digits and . _ : / -, starting with a letter or digit");
const labelValueField = z
  .string()
  .regex(LABEL_VALUE, "label values: up to 128 of letters, digits and . _ : / @ + -");
export const labelsField = z
  .record(labelKeyField, labelValueField)
  .refine((labels) => Object.keys(labels).length <= MAX_LABELS, `at most ${MAX_LABELS} labels`)
  .meta({
    description: `Up to ${MAX_LABELS} key/value pairs to group and find jobs (GET /api/v1/jobs?label=key=value)`,
    example: { team: "billing", env: "prod" },
  });

/** An opt-in window each firing runs at a stable offset inside (schedule/jitter.ts). */
export const jitterField = durationInput.optional().meta({
  description:
    "Spread runs over a window after each firing (at most a day): each firing runs at an offset drawn from the job id and the firing, the same every time, cut short so a run never passes the next firing",
  example: "PT5M",
});

/** A Lambda function's ARN: unqualified, or with a version or alias. */
export const LAMBDA_FUNCTION_ARN =
  /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$/;
export const IAM_ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[A-Za-z0-9+=,.@_/-]{1,512}$/;

const roleArnField = z
  .string()
  .max(2048)
  .regex(
    IAM_ROLE_ARN,
    "must be an IAM role ARN, like arn:aws:iam::123456789012:role/jobsched-target-reminders",
  )
  .meta({
    description:
      "A role in your own account, named to match the deployment's targetRoleNames (default jobsched-target-*), that the dispatcher assumes with your tenant as the external id and the jobsched-tenant session tag (its trust policy checks both) to call the target",
  });

/** Where a push job's runs go instead of to workers (decision 0029). */
export const targetField = z
  .discriminatedUnion("kind", [
    z.strictObject({
      kind: z.literal("https"),
      url: z.string().min(1).max(2048).meta({
        description:
          "Receives a POST of the run's envelope, signed per Standard Webhooks with your tenant's webhook secret",
        example: "https://hooks.example.com/jobsched",
      }),
      timeoutSeconds: z
        .int()
        .min(1)
        .max(MAX_TARGET_TIMEOUT_SECONDS)
        .default(DEFAULT_TARGET_TIMEOUT_SECONDS)
        .meta({ description: "How long the endpoint has to answer (a timeout is a retryable failure)" }),
      concurrency: z
        .int()
        .min(1)
        .max(100)
        .default(DEFAULT_TARGET_CONCURRENCY)
        .meta({ description: "Deliveries to this endpoint one dispatcher has in flight at once" }),
    }),
    z.strictObject({
      kind: z.literal("lambda"),
      functionArn: z
        .string()
        .max(2048)
        .regex(
          LAMBDA_FUNCTION_ARN,
          "must be a Lambda function ARN (optionally with a version or alias), like arn:aws:lambda:us-east-1:123456789012:function:reminders",
        ),
      roleArn: roleArnField,
      invocation: z
        .enum(Object.values(LambdaInvocation) as [LambdaInvocation, ...LambdaInvocation[]])
        .default(LambdaInvocation.Sync)
        .meta({
          description: `sync: wait for the function's answer, at most ${AWS_TARGET_TIMEOUT_SECONDS} s (a function error or no answer in time fails the attempt, which retries; a function that runs longer goes on running, so it runs again). async: Lambda's asynchronous invocation (InvocationType Event), as EventBridge Scheduler invokes: accepted is delivered, the function may run up to 15 minutes, and its own errors are Lambda's to retry`,
        }),
    }),
    z.strictObject({
      kind: z.literal("sqs"),
      queueUrl: z.string().min(1).max(2048).meta({
        description:
          "Receives the run's envelope as a message (the run key as deduplication id on FIFO queues)",
        example: "https://sqs.us-east-1.amazonaws.com/123456789012/reminders",
      }),
      roleArn: roleArnField,
    }),
  ])
  .meta({
    id: "Target",
    description:
      "Push delivery: the scheduler calls this target for each run instead of leaving it to workers (leave out `type`)",
  });

/** The longest pause reason: 50 audit entries of them stay far under DynamoDB's item size. */
export const MAX_REASON_CHARS = 256;

export const createJobRequest = z
  .strictObject({
    type: jobType.optional().meta({
      description: "What kind of work this is; workers lease runs by type. Required unless `target` is given",
    }),
    target: targetField.optional(),
    // The body came from JSON.parse, so any value here is JSON already (z.json() would do the
    // same check recursively, and its recursion defeats the OpenAPI generator).
    payload: z
      .unknown()
      .optional()
      .refine(
        (value) => utf8Length(JSON.stringify(value ?? null)) <= MAX_PAYLOAD_BYTES,
        `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`,
      )
      // Stored as a DynamoDB map, a payload can take far more room than its JSON (a list of
      // small numbers: 3 bytes an element, not 2); the job item must stay under 400 KB.
      .refine(
        (value) => documentSize(value ?? null) <= MAX_PAYLOAD_BYTES,
        `must be at most ${MAX_PAYLOAD_BYTES} bytes as DynamoDB counts them (lists and maps cost 3 bytes, and 1 an element)`,
      )
      .meta({
        description:
          "Any JSON, at most 256 KiB (as JSON and as DynamoDB sizes it), nested at most 31 levels, numbers within +-(2^53 - 1); handed to the worker with each run",
      }),
    idempotencyKey: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .meta({ description: "Repeat a create safely: the same key and body return the original job" }),
    runAt: isoInstant
      .optional()
      .meta({ description: "Run once at this instant (at most 5 minutes in the past)" }),
    cron: z.string().min(1).max(256).optional().meta({
      description: "Five-field cron expression or macro, read in timeZone",
      example: "0 9 * * MON-FRI",
    }),
    timeZone: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .meta({ description: "IANA time zone of the cron expression (default UTC)", example: "Europe/London" }),
    dstPolicy: dstPolicyField,
    interval: z
      .strictObject({ every: z.string().min(1).max(64).meta({ example: "15m" }) })
      .optional()
      .meta({ description: "Fixed interval computed in UTC: 15m, 2h, 1d or an ISO 8601 duration" }),
    jitter: jitterField,
    startAt: isoInstant.optional().meta({ description: "First instant a recurring schedule may run" }),
    endAt: isoInstant.optional().meta({ description: "Last instant a recurring schedule may run" }),
    missedRuns: z
      .enum(["catch-up", "run-once", "skip"])
      .default("run-once")
      .meta({ description: "What to do with firings missed during an outage or a pause" }),
    overlapPolicy: overlapPolicyField.optional(),
    delivery: deliveryField.optional(),
    labels: labelsField.optional(),
    maxLateness: durationInput
      .optional()
      .meta({ description: "A run later than this is recorded as missed instead of started" }),
    maxAttempts: z.int().min(1).max(MAX_ATTEMPTS_LIMIT).default(DEFAULT_MAX_ATTEMPTS),
    retry: z
      .strictObject({ base: durationInput.optional(), cap: durationInput.optional() })
      .optional()
      .meta({ description: "Retry backoff: base (default 10 s) doubling up to cap (default 1 h)" }),
    leaseSeconds: z.int().min(MIN_LEASE_SECONDS).max(MAX_LEASE_SECONDS).optional().meta({
      description:
        "How long a worker holds a run between heartbeats (default 30; at most 42600, SQS's 12 hours less room for the lead)",
    }),
    paused: z
      .strictObject({
        reason: z
          .string()
          .min(1)
          .max(MAX_REASON_CHARS)
          .optional()
          .meta({ description: "Why; shown on the job while it is paused and kept in its audit trail" }),
      })
      .optional()
      .meta({
        description:
          "Create the job paused: it creates no run until resumed (jobsched import jobs does so for a job paused where it was exported)",
      }),
    importedFrom: z
      .string()
      .regex(
        /^j_[0-9a-z]{20}$/,
        "must be a job id (j_ and 20 characters), the job's id where it was exported",
      )
      .optional()
      .meta({
        description:
          "The job's id in the deployment it was exported from (jobsched import jobs): its jitter offsets stay those of that id, so its next runs are kept; shown on the job",
      }),
  })
  .meta({ id: "CreateJobRequest" });
export type CreateJobRequest = z.output<typeof createJobRequest>;

/** Most jobs in one bulk create (POST /api/v1/jobs/batch). */
export const MAX_BATCH_JOBS = 100;
/** Longest batch idempotency key, as an item's (each item's key is a digest of it: batchItemKey). */
export const MAX_BATCH_KEY_LENGTH = 256;

/**
 * POST /api/v1/jobs/batch: each item is a create body of its own (createJobRequest), checked
 * one by one, so one item's problem is that item's 400 and never another's.
 */
export const createJobsRequest = z.strictObject({
  jobs: z
    .array(z.unknown().meta({ description: "A create body, as POST /api/v1/jobs takes it" }))
    .min(1)
    .max(MAX_BATCH_JOBS)
    .meta({ description: `1-${MAX_BATCH_JOBS} jobs, each as POST /api/v1/jobs takes it` }),
  idempotencyKey: z.string().min(1).max(MAX_BATCH_KEY_LENGTH).optional().meta({
    description:
      "Repeat the batch safely: each item without a key of its own gets one derived from this key and its place, so the same batch sent again unchanged creates nothing new",
  }),
});

/**
 * PATCH /api/v1/jobs/{jobId}: a JSON merge patch (RFC 7396) of the create's fields. Fields
 * left out are kept; `null` clears an optional one (to its default); naming one schedule kind
 * (runAt, cron, interval) replaces the other. The type and the idempotency key cannot change.
 */
const create = createJobRequest.shape;
export const updateJobRequest = z
  .strictObject({
    payload: create.payload,
    runAt: isoInstant.optional(),
    cron: create.cron,
    timeZone: create.timeZone.nullable(),
    dstPolicy: dstPolicyField.nullable(),
    interval: create.interval,
    jitter: jitterField.nullable(),
    startAt: isoInstant.nullable().optional(),
    endAt: isoInstant.nullable().optional(),
    missedRuns: z.enum(["catch-up", "run-once", "skip"]).optional(),
    overlapPolicy: overlapPolicyField.optional(),
    delivery: deliveryField.optional(),
    // Merged key by key (RFC 7396): a label set to null is removed, the others are kept.
    labels: z
      .record(labelKeyField, labelValueField.nullable())
      .refine((labels) => Object.keys(labels).length <= MAX_LABELS, `at most ${MAX_LABELS} labels`)
      .nullable()
      .optional(),
    maxLateness: durationInput.nullable().optional(),
    maxAttempts: z.int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
    retry: create.retry.nullable(),
    leaseSeconds: create.leaseSeconds.nullable(),
    // Another destination of the same kind (the kind is the job's type, which cannot change).
    target: targetField.optional(),
  })
  .meta({ id: "UpdateJobRequest" });
export type UpdateJobRequest = z.output<typeof updateJobRequest>;

export const pauseRequest = z
  .strictObject({
    reason: z.string().min(1).max(MAX_REASON_CHARS).optional().meta({
      description: "Why the job is paused; shown on the job while it is paused and kept in its audit trail",
      example: "downstream maintenance until 14:00",
    }),
  })
  .meta({ id: "PauseRequest" });

/** A manual run takes no options yet; the object is strict so a typo is a 400. */
export const triggerRequest = z.strictObject({}).meta({ id: "TriggerRequest" });

export const backfillRequest = z
  .strictObject({
    from: isoInstant.meta({ description: "First instant of the range (inclusive)" }),
    to: isoInstant.meta({ description: "Last instant of the range (inclusive); not in the future" }),
  })
  .meta({ id: "BackfillRequest" });

export const listJobsQuery = z.strictObject({
  status: z.enum(["active", "paused", "cancelled", "completed"]).optional(),
  // A push job's type is its target's kind: @https, @lambda or @sqs.
  type: z.union([jobType, z.enum(PUSH_TYPES)]).optional(),
  label: z
    .string()
    .min(3)
    .max(2048)
    .transform((text, ctx) => {
      const pairs: Array<[string, string]> = [];
      for (const pair of text.split(",")) {
        const [key = "", value, ...rest] = pair.split("=");
        if (value === undefined || rest.length > 0 || !LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) {
          ctx.addIssue({ code: "custom", message: `"${pair}" is not key=value (comma-separated pairs)` });
          return z.NEVER;
        }
        pairs.push([key, value]);
      }
      if (pairs.length > MAX_LABELS) {
        ctx.addIssue({ code: "custom", message: `at most ${MAX_LABELS} pairs` });
        return z.NEVER;
      }
      return pairs;
    })
    .optional()
    .meta({ description: "Only jobs with every one of these labels: key=value pairs, comma-separated" }),
  limit: z.coerce.number({ message: "must be a number" }).int().min(1).max(100).default(25),
  cursor: z.string().min(1).max(2048).optional(),
});

export const pageQuery = z.strictObject({
  limit: z.coerce.number({ message: "must be a number" }).int().min(1).max(100).default(25),
  cursor: z.string().min(1).max(2048).optional(),
});

export const leaseRequest = z
  .strictObject({
    workerId: z.string().min(1).max(128),
    types: z.array(jobType).min(1).max(32),
    /** Several SQS receives serve one request when more than 10 are asked for. */
    max: z.int().min(1).max(100).default(1),
    /** Long-poll: how long to wait for a due run when none is ready. */
    waitSeconds: z.int().min(0).max(20).default(1).meta({
      description:
        "Long poll: how long to wait for a due run when none is ready; the request answers as soon as runs are leased",
    }),
    prefer: z
      .strictObject({ tenant: z.string().min(1).max(2048), type: jobType })
      .optional()
      .meta({
        description:
          "A lane to poll first: the one the worker's lane listening saw a message in (POST /internal/lanes)",
      }),
  })
  .meta({ id: "LeaseRequest" });
export type LeaseRequest = z.output<typeof leaseRequest>;

export const laneListenRequest = z
  .strictObject({
    workerId: z.string().min(1).max(128),
    types: z.array(jobType).min(1).max(32),
    /** Lane queues the worker found deleted (QueueDoesNotExist): opened again, or made anew. */
    gone: z.array(z.string().min(1).max(1024)).max(64).default([]),
  })
  .meta({ id: "LaneListenRequest" });
export type LaneListenRequest = z.output<typeof laneListenRequest>;

export const completeRequest = z
  .strictObject({
    fence: z.int().min(1),
    result: z.enum(["succeeded", "failed"]),
    retryable: z.boolean().default(true),
    error: z.string().max(4096).optional(),
    retryAfter: z.int().min(0).max(86_400).optional().meta({
      description:
        "A retryable failure's retry waits at least this many seconds (as an HTTP Retry-After asks), within the job's backoff cap",
    }),
    final: z.boolean().optional().meta({
      description:
        "The lease's `final`, echoed: saves the server a read; a wrong value costs that read, nothing else",
    }),
  })
  .meta({ id: "CompleteRequest" });
export type CompleteRequest = z.output<typeof completeRequest>;

/** The most items one batched worker call carries (completions, heartbeats). */
export const MAX_BATCH_ITEMS = 100;

const runIdField = z.string().min(1).max(200).meta({ description: "The leased run's runId" });

/**
 * The documented shape of a batch of completions. The use case reads each item on its own
 * (completeRuns), so one bad item is that item's 400 alone.
 */
export const completeBatchRequest = z
  .strictObject({
    completions: z
      .array(completeRequest.extend({ runId: runIdField }))
      .min(1)
      .max(MAX_BATCH_ITEMS),
  })
  .meta({ id: "CompleteBatchRequest" });

export const heartbeatRequest = z
  .strictObject({
    fence: z.int().min(1),
  })
  .meta({ id: "HeartbeatRequest" });

/** The documented shape of a batch of heartbeats; each item is read on its own. */
export const heartbeatBatchRequest = z
  .strictObject({
    heartbeats: z
      .array(heartbeatRequest.extend({ runId: runIdField }))
      .min(1)
      .max(MAX_BATCH_ITEMS),
  })
  .meta({ id: "HeartbeatBatchRequest" });

/** GET /api/v1/schedules/preview: the most runs one preview shows. */
export const MAX_PREVIEW_COUNT = 100;

/** GET /api/v1/schedules/preview's query: a schedule (as a create names it) and how many runs. */
export const previewQuery = z.strictObject({
  cron: z.string().optional(),
  timeZone: z.string().optional(),
  dstPolicy: dstPolicyField,
  jitter: z.string().min(1).max(64).optional(),
  jobId: z.string().min(1).max(64).optional(),
  interval: z.string().optional(),
  runAt: z.string().optional(),
  startAt: z.string().optional(),
  endAt: z.string().optional(),
  from: z.string().optional(),
  count: z.coerce
    .number({ message: "must be a number" })
    .int("must be a whole number")
    .min(1)
    .max(MAX_PREVIEW_COUNT)
    .default(10),
});
