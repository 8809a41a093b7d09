/**
 * @jobsched/worker: the jobsched worker SDK. `createWorker` leases runs of some job types,
 * holds each until its start, runs your handler, heartbeats and reports the outcome;
 * `createSignedFetch` calls the API signed with SigV4 (IAM auth), for the tools around it.
 */

// The signed request is @jobsched/client's, shared; named here too for the tools written against it.
export type { JsonResponse, SignedFetch, SignedFetchOptions } from "@jobsched/client";
export { createSignedFetch, MAX_RETRY_AFTER_SECONDS } from "@jobsched/client";
export type { BellResult, LaneClientFactory } from "./lane-bell.js";
export type { CompletionReport, LeasedRun, RunContext, Worker, WorkerOptions } from "./worker.js";
export { createWorker, PermanentError } from "./worker.js";
