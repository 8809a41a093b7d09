import { z } from "zod";
import type { DueJob, Job } from "../../core/job";
import { bucketOf, dueKeyOf, shardOf } from "../../core/keys";

/** How a job is laid out in the table (see definitions/table.ts), and back. */
export const jobPk = (jobId: string) => `JOB#${jobId}`;
export const JOB_SK = "JOB";

const scheduleSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("once"), runAt: z.number() }),
  z.object({
    kind: z.literal("cron"),
    cron: z.string(),
    timeZone: z.string(),
    startAt: z.number().optional(),
    endAt: z.number().optional(),
  }),
  z.object({
    kind: z.literal("interval"),
    everyMs: z.number(),
    anchor: z.number(),
    startAt: z.number().optional(),
    endAt: z.number().optional(),
  }),
]);
const statusSchema = z.enum(["active", "paused", "cancelled", "completed"]);

const jobItemSchema = z.object({
  jobId: z.string(),
  tenant: z.string(),
  type: z.string(),
  payload: z.unknown(),
  schedule: scheduleSchema,
  status: statusSchema,
  nextRunAt: z.number().optional(),
  maxAttempts: z.number(),
  idempotencyKey: z.string().optional(),
  requestHash: z.string(),
  createdAt: z.number(),
  createdBy: z.string(),
  updatedAt: z.number(),
});

const dueItemSchema = jobItemSchema
  .pick({ jobId: true, tenant: true, type: true, status: true, schedule: true })
  .extend({
    nextRunAt: z.number(),
  });

/** The due-index attributes for a job whose next run is `nextRunAt`, filed as of `now`. */
export function dueAttributes(jobId: string, nextRunAt: number, now: number) {
  // Never file under a bucket older than the writer's clock: sweep cursors only move forward.
  return { dueKey: dueKeyOf(bucketOf(Math.max(nextRunAt, now)), shardOf(jobId)), dueAt: nextRunAt };
}

export function toJobItem(job: Job) {
  return {
    pk: jobPk(job.jobId),
    sk: JOB_SK,
    ...job,
    shard: shardOf(job.jobId),
    ...(job.nextRunAt === undefined ? {} : dueAttributes(job.jobId, job.nextRunAt, job.createdAt)),
  };
}

export function fromJobItem(item: Record<string, unknown>): Job {
  const parsed = jobItemSchema.parse(item);
  return {
    ...parsed,
    payload: parsed.payload ?? null,
    nextRunAt: parsed.nextRunAt,
    idempotencyKey: parsed.idempotencyKey,
  };
}

export function fromDueItem(item: Record<string, unknown>): DueJob {
  return dueItemSchema.parse(item);
}
