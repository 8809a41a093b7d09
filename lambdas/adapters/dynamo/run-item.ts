import { z } from "zod";
import { repairKeyOf } from "../../core/keys";
import type { RepairCandidate } from "../../core/ports";
import type { Run } from "../../core/run";
import { jobPk } from "./job-item";

/** Runs live beside their job: pk = JOB#<jobId>, sk = RUN#<scheduled ms, 15 digits>. */
export const runSk = (scheduledFor: number) => `RUN#${String(scheduledFor).padStart(15, "0")}`;
export const RUN_SK_PREFIX = "RUN#";

export function runKey(jobId: string, scheduledFor: number) {
  return { pk: jobPk(jobId), sk: runSk(scheduledFor) };
}

const statusSchema = z.enum([
  "pending",
  "leased",
  "succeeded",
  "dead-lettered",
  "cancelled",
  "missed",
  "skipped",
  "lost",
]);

const runItemSchema = z.object({
  runId: z.string(),
  jobId: z.string(),
  tenant: z.string(),
  type: z.string(),
  scheduledFor: z.number(),
  status: statusSchema,
  attempt: z.number(),
  fence: z.number(),
  createdAt: z.number(),
  startedAt: z.number().optional(),
  leaseExpiresAt: z.number().optional(),
  workerId: z.string().optional(),
  finishedAt: z.number().optional(),
  error: z.string().optional(),
  checkAt: z.number().optional(),
  final: z.boolean().default(false),
  retryAt: z.number().optional(),
  replays: z.number().optional(),
  replayedAt: z.number().optional(),
  replayedBy: z.string().optional(),
  missedCount: z.number().optional(),
  missedThrough: z.number().optional(),
  origin: z.enum(["manual", "backfill"]).optional(),
  wakes: z.number().optional(),
  failedAttempts: z
    .array(
      z.object({
        attempt: z.number(),
        fence: z.number(),
        startedAt: z.number().optional(),
        failedAt: z.number(),
        error: z.string(),
      }),
    )
    .optional(),
});

const repairItemSchema = runItemSchema
  .pick({
    runId: true,
    jobId: true,
    tenant: true,
    type: true,
    status: true,
    scheduledFor: true,
    leaseExpiresAt: true,
    retryAt: true,
  })
  .extend({ checkAt: z.number() });

export function toRunItem(run: Run) {
  return {
    ...runKey(run.jobId, run.scheduledFor),
    ...run,
    // Unfinished runs sit in the repair index until they finish.
    ...(run.checkAt === undefined ? {} : { repairKey: repairKeyOf(run.jobId) }),
    // When it may be leased (see the run store's LEASABLE condition).
    availableAt:
      run.status === "leased" ? (run.leaseExpiresAt ?? 0) : Math.max(run.scheduledFor, run.retryAt ?? 0),
  };
}

export function fromRunItem(item: Record<string, unknown>): Run {
  const { failedAttempts, ...r } = runItemSchema.parse(item);
  return {
    ...r,
    startedAt: r.startedAt,
    leaseExpiresAt: r.leaseExpiresAt,
    workerId: r.workerId,
    finishedAt: r.finishedAt,
    error: r.error,
    checkAt: r.checkAt,
    ...(failedAttempts === undefined
      ? {}
      : { failedAttempts: failedAttempts.map((a) => ({ ...a, startedAt: a.startedAt })) }),
  };
}

export function fromRepairItem(item: Record<string, unknown>): RepairCandidate {
  const r = repairItemSchema.parse(item);
  return { ...r, leaseExpiresAt: r.leaseExpiresAt };
}
