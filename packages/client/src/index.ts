/**
 * @jobsched/client: the jobsched API from Node.js. `createClient({ endpoint })` signs every
 * request with SigV4 from the standard credential chain (or the credentials you give), answers
 * with the contract's types, throws typed errors (JobschedError and its subclasses by status)
 * and retries throttling, and failures of calls that are safe to repeat, with backoff.
 * `createSignedFetch` is the signed request underneath, shared with the worker SDK.
 */
export * from "./core.js";
export type { CreateClientOptions } from "./create-client.js";
export { createClient } from "./create-client.js";
export type { SignedFetch, SignedFetchOptions } from "./signed-fetch.js";
export { createSignedFetch, MAX_RETRY_AFTER_SECONDS } from "./signed-fetch.js";
