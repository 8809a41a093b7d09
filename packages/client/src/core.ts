/**
 * @jobsched/client/core: the client without its Node.js signing, for browsers and for any
 * transport of your own (the console's page uses it with `fetchTransport`, its server signing).
 */

// The answers' types, so a caller needs no second import (the schemas stay in @jobsched/contract).
export type {
  BackfillResponse,
  CreateJobResponse,
  CreateJobsItemResponse,
  CreateJobsResponse,
  DeadLetterResponse,
  DeadLettersPageResponse,
  JobResponse,
  JobSummaryResponse,
  JobsPageResponse,
  Preview,
  PreviewRun,
  ReplayAllResponse,
  RunResponse,
  RunsPageResponse,
  UpdateJobResponse,
  WebhookSecretResponse,
} from "@jobsched/contract";
export type {
  BackfillInput,
  CallOptions,
  ClientOptions,
  CreateJobInput,
  ListJobsInput,
  PageInput,
  PauseInput,
  PreviewInput,
  UpdateJobInput,
} from "./client.js";
export { JobschedClient } from "./client.js";
export * from "./errors.js";
export type { RetryOptions } from "./retry.js";
export { DEFAULT_RETRY } from "./retry.js";
export type { FetchTransportOptions, JsonResponse, Transport, TransportRequest } from "./transport.js";
export { fetchTransport } from "./transport.js";
