import { targetResponse } from "@jobsched/contract";
import { z } from "zod";
import { type DueJob, isFiledAhead, isFiledDue, type Job } from "../../core/job";
import { aheadKeyOf, bucketOf, dueKeyOf, groupOf, shardOf } from "../../core/keys";

/** How a job is laid out in the table (see definitions/table.ts), and back. */
export const jobPk = (jobId: string) => `JOB#${jobId}`;
/** The job id of an item under a job's partition (the job, its runs, its label pointers). */
export const jobIdOfPk = (pk: unknown) => String(pk).slice("JOB#".length);
export const JOB_SK = "JOB";

const jitterSchema = z.object({ windowMs: z.number(), seed: z.string() }).optional();
const scheduleSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("once"), runAt: z.number(), jitter: jitterSchema }),
  z.object({
    kind: z.literal("cron"),
    cron: z.string(),
    timeZone: z.string(),
    dstPolicy: z.enum(["first-occurrence", "every-occurrence", "skip-gap"]).optional(),
    startAt: z.number().optional(),
    endAt: z.number().optional(),
    jitter: jitterSchema,
  }),
  z.object({
    kind: z.literal("interval"),
    everyMs: z.number(),
    anchor: z.number(),
    startAt: z.number().optional(),
    endAt: z.number().optional(),
    jitter: jitterSchema,
  }),
]);
const statusSchema = z.enum(["active", "paused", "cancelled", "completed"]);
const policySchema = z.enum(["catch-up", "run-once", "skip"]);

const jobItemSchema = z.object({
  jobId: z.string(),
  tenant: z.string(),
  type: z.string(),
  payload: z.unknown(),
  schedule: scheduleSchema,
  status: statusSchema,
  nextRunAt: z.number().optional(),
  missedRuns: policySchema,
  overlapPolicy: z.enum(["allow", "skip", "buffer-one", "cancel-previous"]).optional(),
  activeRunAt: z.number().optional(),
  lastFiringAt: z.number().optional(),
  madeAheadAt: z.number().optional(),
  madeFrom: z.number().optional(),
  madeThrough: z.number().optional(),
  delivery: z.literal("at-most-once").optional(),
  target: targetResponse.optional(),
  labels: z.record(z.string(), z.string()).optional(),
  maxLatenessMs: z.number().optional(),
  maxAttempts: z.number(),
  retry: z.object({ baseMs: z.number(), capMs: z.number() }),
  leaseSeconds: z.number(),
  idempotencyKey: z.string().optional(),
  importedFrom: z.string().optional(),
  requestHash: z.string(),
  createdAt: z.number(),
  createdBy: z.string(),
  updatedAt: z.number(),
  // Jobs stored before versions were kept are at their first.
  version: z.number().default(1),
  audit: z.array(
    z.object({
      action: z.enum(["created", "updated", "paused", "resumed", "cancelled"]),
      by: z.string(),
      at: z.number(),
      reason: z.string().optional(),
      fields: z.array(z.string()).optional(),
    }),
  ),
});

const dueItemSchema = jobItemSchema
  .pick({
    jobId: true,
    tenant: true,
    type: true,
    status: true,
    schedule: true,
    missedRuns: true,
    maxLatenessMs: true,
  })
  .extend({ nextRunAt: z.number() });

/** The due-index attributes for a job whose next run is `nextRunAt`, filed as of `now`. */
export function dueAttributes(jobId: string, nextRunAt: number, now: number) {
  // Never file under a bucket older than the writer's clock: sweep cursors only move forward.
  return { dueKey: dueKeyOf(bucketOf(Math.max(nextRunAt, now)), shardOf(jobId)), dueAt: nextRunAt };
}

/** The due-index attributes of a one-off made ahead at create (decision 0058): its firing's hour. */
export function aheadAttributes(jobId: string, at: number) {
  return { dueKey: aheadKeyOf(bucketOf(at), groupOf(jobId)), dueAt: at };
}

/**
 * The whole item. Only a job with work for the sweep sits in the due index: one with a next run
 * (isFiledDue) under its shard's key, one made ahead (isFiledAhead) under its group's ahead key.
 */
export function toJobItem(job: Job) {
  return {
    pk: jobPk(job.jobId),
    sk: JOB_SK,
    ...job,
    jobTenant: job.tenant,
    shard: shardOf(job.jobId),
    ...(isFiledDue(job)
      ? dueAttributes(job.jobId, job.nextRunAt as number, job.updatedAt)
      : isFiledAhead(job)
        ? aheadAttributes(job.jobId, job.madeAheadAt as number)
        : {}),
  };
}

export function fromJobItem(item: Record<string, unknown>): Job {
  const parsed = jobItemSchema.parse(item);
  return {
    ...parsed,
    payload: parsed.payload ?? null,
    nextRunAt: parsed.nextRunAt,
    maxLatenessMs: parsed.maxLatenessMs,
    idempotencyKey: parsed.idempotencyKey,
  };
}

export function fromDueItem(item: Record<string, unknown>): DueJob {
  const parsed = dueItemSchema.parse(item);
  return { ...parsed, maxLatenessMs: parsed.maxLatenessMs };
}
