/**
 * @jobsched/contract: what jobsched's server and its clients share (issue 16). The request and
 * response schemas (the OpenAPI document is generated from them; the server validates with the
 * first, the clients parse with the second), DynamoDB's document rules a payload is checked
 * against, the statuses, the retry backoff, and the lease protocol's timing constant. Pure:
 * zod only, no Node.js built-in, so it runs in browsers too.
 */
export * from "./backoff.js";
export * from "./document-limits.js";
export * from "./limits.js";
export * from "./protocol.js";
export * from "./requests.js";
export * from "./responses.js";
export * from "./statuses.js";
