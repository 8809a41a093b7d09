/** Retry backoff: defined with the contract the worker SDK shares (packages/contract). */
export { type BackoffPolicy, DEFAULT_BACKOFF, type Random, retryDelayMs } from "@jobsched/contract";
