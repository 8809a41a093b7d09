/**
 * Limits a request is checked against, shared by the server (which enforces them) and the
 * clients (which type and document them).
 */

/** SQS's largest message, and so the largest payload a setting may allow (requests.ts). */
export const PAYLOAD_LIMIT_BYTES = 262_144;

/** A push job's type: its target's kind with a leading `@`, which worker types cannot have. */
export const PUSH_TYPES = ["@https", "@lambda", "@sqs"] as const;

/** The longest an endpoint may take to answer (and the default). */
export const MAX_TARGET_TIMEOUT_SECONDS = 30;
export const DEFAULT_TARGET_TIMEOUT_SECONDS = 10;
export const DEFAULT_TARGET_CONCURRENCY = 10;
/**
 * The timeout of Lambda and SQS calls. A synchronous invoke waits this long for the function's
 * answer: a function that runs longer is cut off (a retryable failure that says so) while it
 * goes on running, so longer functions need `invocation: "async"` (decision 0033).
 */
export const AWS_TARGET_TIMEOUT_SECONDS = 15;

/** How many of its newest runs a job's own answer (GET /api/v1/jobs/{jobId}) carries. */
export const JOB_RECENT_RUNS = 20;
