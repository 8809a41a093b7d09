/**
 * @jobsched/contract: what jobsched's server and its clients share (issue 16). The response
 * schemas (the OpenAPI document is generated from them; the worker SDK parses with them), the
 * statuses, the retry backoff, and the lease protocol's timing constant. Pure: zod only.
 */
export * from "./backoff.js";
export * from "./protocol.js";
export * from "./responses.js";
export * from "./statuses.js";
