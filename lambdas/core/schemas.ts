import { z } from "zod";

/**
 * Request bodies of the API, as zod schemas. Objects are strict: an unknown field is a 400,
 * not silently ignored, so a typo like "runat" cannot create a job that never runs.
 */

/** Largest accepted payload, measured as UTF-8 JSON. Well under SQS and DynamoDB limits. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
export const DEFAULT_MAX_ATTEMPTS = 5;
export const MAX_ATTEMPTS_LIMIT = 100;

const jobType = z
  .string()
  .min(1)
  .max(128)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]*$/,
    "letters, digits and . _ : - only, starting with a letter or digit",
  );

const isoInstant = z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time with an offset" });

export const createJobRequest = z.strictObject({
  type: jobType,
  payload: z
    .json()
    .optional()
    .refine(
      (value) => Buffer.byteLength(JSON.stringify(value ?? null), "utf8") <= MAX_PAYLOAD_BYTES,
      `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`,
    ),
  runAt: isoInstant,
  idempotencyKey: z.string().min(1).max(256).optional(),
  maxAttempts: z.int().min(1).max(MAX_ATTEMPTS_LIMIT).default(DEFAULT_MAX_ATTEMPTS),
});
export type CreateJobRequest = z.output<typeof createJobRequest>;

export const leaseRequest = z.strictObject({
  workerId: z.string().min(1).max(128),
  types: z.array(jobType).min(1).max(32),
  max: z.int().min(1).max(10).default(1),
  /** Long-poll: how long to wait for a due run when none is ready. */
  waitSeconds: z.int().min(0).max(20).default(1),
});
export type LeaseRequest = z.output<typeof leaseRequest>;

export const completeRequest = z.strictObject({
  fence: z.int().min(1),
  result: z.enum(["succeeded", "failed"]),
  retryable: z.boolean().default(true),
  error: z.string().max(4096).optional(),
});
export type CompleteRequest = z.output<typeof completeRequest>;
