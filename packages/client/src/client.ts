import {
  type BackfillResponse,
  type backfillRequest,
  backfillResponse,
  type CreateJobResponse,
  type CreateJobsResponse,
  type createJobRequest,
  createJobResponse,
  createJobsResponse,
  type DeadLetterResponse,
  type DeadLettersPageResponse,
  deadLetterResponse,
  deadLettersPageResponse,
  type JobResponse,
  type JobsPageResponse,
  jobResponse,
  jobsPageResponse,
  type Preview,
  type pauseRequest,
  type previewQuery,
  previewResponse,
  type Random,
  type ReplayAllResponse,
  type RunResponse,
  type RunsPageResponse,
  replayAllResponse,
  runResponse,
  runsPageResponse,
  type UpdateJobResponse,
  type updateJobRequest,
  updateJobResponse,
  type WebhookSecretResponse,
  webhookSecretResponse,
} from "@jobsched/contract";
import type { z } from "zod";
import { errorOf, NotFoundError, UnexpectedResponseError } from "./errors.js";
import { type RetryOptions, retryAfterSecondsOf, sleep, withRetries } from "./retry.js";
import type { Transport, TransportRequest } from "./transport.js";

/** A create's body, as POST /api/v1/jobs takes it (the contract's createJobRequest). */
export type CreateJobInput = z.input<typeof createJobRequest>;
/** An update's JSON merge patch (PATCH /api/v1/jobs/{jobId}): `null` clears a field. */
export type UpdateJobInput = z.input<typeof updateJobRequest>;
export type PauseInput = z.input<typeof pauseRequest>;
export type BackfillInput = z.input<typeof backfillRequest>;
/** A preview's query: a schedule as a create names it, and how many runs (1-100, default 10). */
export type PreviewInput = Omit<z.input<typeof previewQuery>, "count"> & { readonly count?: number };

export interface PageInput {
  /** Items a page holds, 1-100 (the API's default 25). */
  readonly limit?: number;
  /** Where to go on from: the `cursor` of the page before. */
  readonly cursor?: string;
}

export interface ListJobsInput extends PageInput {
  readonly status?: "active" | "paused" | "cancelled" | "completed";
  /** A job type, or a push job's target kind (@https, @lambda, @sqs). */
  readonly type?: string;
  /** Only jobs with every one of these labels. */
  readonly labels?: Readonly<Record<string, string>>;
  /** The same as the API spells it, key=value pairs comma-separated (with `labels`, both apply). */
  readonly label?: string;
}

export interface CallOptions {
  readonly signal?: AbortSignal;
}

type Request = TransportRequest & CallOptions;

export interface ClientOptions {
  /** How requests reach the API: `createClient` gives a SigV4-signed one. */
  readonly transport: Transport;
  readonly retry?: RetryOptions;
  /** For tests: the wait between tries and the jitter's random numbers. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random?: Random;
}

/** Full jobs read side by side for an export page. */
const EXPORT_READS_AT_ONCE = 8;

const jobPath = (jobId: string, suffix = "") => `/api/v1/jobs/${encodeURIComponent(jobId)}${suffix}`;

/** A query's set values as strings. */
function queryOf(fields: Record<string, string | number | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, value]) => [name, value === undefined ? undefined : String(value)]),
  );
}

/**
 * The jobsched API, one typed method per /api/v1 route. Answers are checked against the
 * contract's schemas; an error answer throws a JobschedError subclass by status (errors.ts),
 * carrying the API's `code`, `field` and the status. Throttled calls, and failed calls that are
 * safe to repeat, are retried with backoff (retry.ts).
 *
 *   const client = createClient({ endpoint: "http://127.0.0.1:8787" });
 *   const { jobId } = await client.createJob({ type: "send-invoice", runAt: "2026-12-24T09:00:00Z" });
 *   const job = await client.getJob(jobId);
 */
export class JobschedClient {
  readonly #transport: Transport;
  readonly #retry: RetryOptions;
  readonly #environment: { sleep: (ms: number, signal?: AbortSignal) => Promise<void>; random: Random };

  constructor(options: ClientOptions) {
    this.#transport = options.transport;
    this.#retry = options.retry ?? {};
    this.#environment = { sleep: options.sleep ?? sleep, random: options.random ?? Math.random };
  }

  /** Creates a job; with an `idempotencyKey` already used, answers the existing job (`created: false`). */
  async createJob(
    job: CreateJobInput,
    options: CallOptions = {},
  ): Promise<CreateJobResponse & { created: boolean }> {
    const answer = await this.#call("POST", "/api/v1/jobs", job.idempotencyKey !== undefined, {
      body: job,
      signal: options.signal,
    });
    return { ...this.#parse(createJobResponse, answer), created: answer.status === 201 };
  }

  /**
   * Creates 1-100 jobs in one request. Each item has its own result (created, existing, or its
   * own error with `field` as jobs.<index>.<field>); one item's failure never fails another.
   * With `idempotencyKey`, the same batch sent again creates nothing new.
   */
  async createJobs(
    jobs: readonly CreateJobInput[],
    options: CallOptions & { idempotencyKey?: string } = {},
  ): Promise<CreateJobsResponse> {
    const keyed =
      options.idempotencyKey !== undefined || jobs.every((job) => job.idempotencyKey !== undefined);
    const answer = await this.#call("POST", "/api/v1/jobs/batch", keyed, {
      body: {
        jobs,
        ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
      },
      signal: options.signal,
    });
    return this.#parse(createJobsResponse, answer);
  }

  /** A job in full: definition, status, labels, audit trail and its latest runs. */
  async getJob(jobId: string, options: CallOptions = {}): Promise<JobResponse> {
    return this.#parse(jobResponse, await this.#call("GET", jobPath(jobId), true, options));
  }

  /** One page of the caller's jobs, newest first; `cursor` leads to the next. */
  async listJobs(input: ListJobsInput = {}, options: CallOptions = {}): Promise<JobsPageResponse> {
    const pairs = [
      ...(input.label === undefined ? [] : [input.label]),
      ...Object.entries(input.labels ?? {}).map(([key, value]) => `${key}=${value}`),
    ];
    const label = pairs.length === 0 ? undefined : pairs.join(",");
    const query = queryOf({
      status: input.status,
      type: input.type,
      label,
      limit: input.limit,
      cursor: input.cursor,
    });
    return this.#parse(
      jobsPageResponse,
      await this.#call("GET", "/api/v1/jobs", true, { ...options, query }),
    );
  }

  /** Every page of the caller's jobs, from `cursor` (or the first) to the last. */
  listJobsPages(input: ListJobsInput = {}, options: CallOptions = {}): AsyncIterable<JobsPageResponse> {
    return pages(input.cursor, (cursor) => this.listJobs({ ...input, cursor }, options));
  }

  /**
   * Updates a job in place with a JSON merge patch. `ifMatch` (the job's `version`, as read)
   * makes it conditional: if the job changed since, a PreconditionFailedError and no change.
   */
  async updateJob(
    jobId: string,
    patch: UpdateJobInput,
    options: CallOptions & { ifMatch?: number | string } = {},
  ): Promise<UpdateJobResponse> {
    const ifMatch = options.ifMatch === undefined ? undefined : ifMatchHeader(options.ifMatch);
    const answer = await this.#call("PATCH", jobPath(jobId), true, {
      body: patch,
      signal: options.signal,
      ...(ifMatch === undefined ? {} : { headers: { "if-match": ifMatch } }),
    });
    return this.#parse(updateJobResponse, answer);
  }

  /** Cancels a job: no new runs; a run in progress finishes. */
  async cancelJob(jobId: string, options: CallOptions = {}): Promise<JobResponse> {
    return this.#parse(jobResponse, await this.#call("DELETE", jobPath(jobId), true, options));
  }

  async pauseJob(jobId: string, input: PauseInput = {}, options: CallOptions = {}): Promise<JobResponse> {
    const answer = await this.#call("POST", jobPath(jobId, "/pause"), true, { ...options, body: input });
    return this.#parse(jobResponse, answer);
  }

  async resumeJob(jobId: string, options: CallOptions = {}): Promise<JobResponse> {
    return this.#parse(jobResponse, await this.#call("POST", jobPath(jobId, "/resume"), true, options));
  }

  /** Starts a run now, outside the schedule. Not retried on a 5xx: it might have started one. */
  async triggerJob(jobId: string, options: CallOptions = {}): Promise<RunResponse> {
    const answer = await this.#call("POST", jobPath(jobId, "/trigger"), false, { ...options, body: {} });
    return this.#parse(runResponse, answer);
  }

  /** Runs the firings of a past range that have no run (or were missed); the rest are left. */
  async backfillJob(
    jobId: string,
    range: BackfillInput,
    options: CallOptions = {},
  ): Promise<BackfillResponse> {
    const answer = await this.#call("POST", jobPath(jobId, "/backfill"), true, { ...options, body: range });
    return this.#parse(backfillResponse, answer);
  }

  /** One page of a job's runs, newest first. */
  async listRuns(jobId: string, page: PageInput = {}, options: CallOptions = {}): Promise<RunsPageResponse> {
    const query = queryOf({ limit: page.limit, cursor: page.cursor });
    return this.#parse(
      runsPageResponse,
      await this.#call("GET", jobPath(jobId, "/runs"), true, { ...options, query }),
    );
  }

  listRunsPages(
    jobId: string,
    page: PageInput = {},
    options: CallOptions = {},
  ): AsyncIterable<RunsPageResponse> {
    return pages(page.cursor, (cursor) => this.listRuns(jobId, { ...page, cursor }, options));
  }

  /** One page of the caller's dead letters: runs that exhausted their attempts. */
  async listDeadLetters(page: PageInput = {}, options: CallOptions = {}): Promise<DeadLettersPageResponse> {
    const query = queryOf({ limit: page.limit, cursor: page.cursor });
    const answer = await this.#call("GET", "/api/v1/dead-letters", true, { ...options, query });
    return this.#parse(deadLettersPageResponse, answer);
  }

  listDeadLettersPages(
    page: PageInput = {},
    options: CallOptions = {},
  ): AsyncIterable<DeadLettersPageResponse> {
    return pages(page.cursor, (cursor) => this.listDeadLetters({ ...page, cursor }, options));
  }

  /** Runs a dead letter again: the same run key, its attempts reset. */
  async replayDeadLetter(runId: string, options: CallOptions = {}): Promise<DeadLetterResponse> {
    const path = `/api/v1/dead-letters/${encodeURIComponent(runId)}/replay`;
    return this.#parse(deadLetterResponse, await this.#call("POST", path, true, options));
  }

  /**
   * Replays the caller's dead letters, as many as one request's time allows: `complete: false`
   * means some remain (call again). `replayAllDeadLettersUntilDone` does the calling.
   */
  async replayAllDeadLetters(options: CallOptions = {}): Promise<ReplayAllResponse> {
    return this.#parse(
      replayAllResponse,
      await this.#call("POST", "/api/v1/dead-letters/replay", true, options),
    );
  }

  /**
   * Replays every dead letter, a request after another until none remain; `onProgress` after
   * each. Stops (answering `complete: false`) after three requests in a row that replayed
   * nothing and were not complete, or after `maxRequests` (default 100: a replayed run that fails
   * at once comes back to the dead letters, and would be replayed again for ever).
   * `skippedPaused` is the last request's count: the dead letters of paused jobs, left.
   */
  async replayAllDeadLettersUntilDone(
    options: CallOptions & {
      onProgress?: (total: ReplayAllResponse, rounds: number) => void;
      maxRequests?: number;
    } = {},
  ): Promise<ReplayAllResponse> {
    const total = { replayed: 0, skippedPaused: 0, complete: false };
    const most = options.maxRequests ?? 100;
    for (let rounds = 1, idle = 0; !total.complete && idle < 3 && rounds <= most; rounds++) {
      const answer = await this.replayAllDeadLetters(options);
      total.replayed += answer.replayed;
      total.skippedPaused = answer.skippedPaused;
      total.complete = answer.complete;
      idle = answer.replayed === 0 ? idle + 1 : 0;
      options.onProgress?.({ ...total }, rounds);
    }
    return total;
  }

  /** The next runs of a schedule (cron, interval or runAt), in UTC and local time, DST marked. */
  async previewSchedule(input: PreviewInput, options: CallOptions = {}): Promise<Preview> {
    const query = queryOf({ ...input });
    const answer = await this.#call("GET", "/api/v1/schedules/preview", true, { ...options, query });
    return this.#parse(previewResponse, answer);
  }

  /**
   * Makes the tenant's webhook secret, or rotates it (the previous one still signs for a while).
   * Only this answer carries the secret. Not retried on a 5xx: it may have rotated.
   */
  async rotateWebhookSecret(options: CallOptions = {}): Promise<WebhookSecretResponse> {
    return this.#parse(
      webhookSecretResponse,
      await this.#call("POST", "/api/v1/webhook-secret", false, options),
    );
  }

  /** When the webhook secret was made (never the secret itself). */
  async getWebhookSecret(options: CallOptions = {}): Promise<WebhookSecretResponse> {
    return this.#parse(
      webhookSecretResponse,
      await this.#call("GET", "/api/v1/webhook-secret", true, options),
    );
  }

  /** The API's OpenAPI 3.1 document. */
  async openApiDocument(options: CallOptions = {}): Promise<Record<string, unknown>> {
    const answer = await this.#call("GET", "/api/v1/openapi.json", true, options);
    if (typeof answer.body !== "object" || answer.body === null)
      throw new UnexpectedResponseError(
        answer.status,
        "UnexpectedResponse",
        "the OpenAPI document is not an object",
      );
    return answer.body as Record<string, unknown>;
  }

  /**
   * One page of an export: the listing's page (up to 100 jobs), each job read in full, in the
   * listing's order; a job deleted since the listing is left out. `cursor` leads on.
   */
  async exportPage(
    input: Omit<ListJobsInput, "limit"> = {},
    options: CallOptions = {},
  ): Promise<{ jobs: JobResponse[]; cursor?: string }> {
    const page = await this.listJobs({ ...input, limit: 100 }, options);
    const jobs: Array<JobResponse | undefined> = new Array(page.jobs.length);
    let next = 0;
    const reader = async () => {
      for (let i = next++; i < page.jobs.length; i = next++) {
        const summary = page.jobs[i];
        if (summary === undefined) continue;
        try {
          jobs[i] = await this.getJob(summary.jobId, options);
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(EXPORT_READS_AT_ONCE, page.jobs.length) }, reader));
    const found = jobs.filter((job): job is JobResponse => job !== undefined);
    return page.cursor === undefined ? { jobs: found } : { jobs: found, cursor: page.cursor };
  }

  /** Every job of the caller in full, page by page (exportPage), for backups and moves. */
  exportJobs(
    input: Omit<ListJobsInput, "limit"> = {},
    options: CallOptions = {},
  ): AsyncIterable<{ jobs: JobResponse[]; cursor?: string }> {
    return pages(input.cursor, (cursor) => this.exportPage({ ...input, cursor }, options));
  }

  /**
   * Sends a request to any path with the client's transport and retries, answering every
   * status: for a route this client does not know yet. `safeToRepeat` allows retrying 5xx.
   */
  async request(
    method: string,
    path: string,
    init: Request = {},
    safeToRepeat = method === "GET",
  ): Promise<{ status: number; body: unknown; etag?: string }> {
    const answer = await this.#send(method, path, safeToRepeat, init);
    const etag = answer.headers?.get("etag") ?? undefined;
    return etag === undefined ? { status: answer.status, body: answer.body } : { ...answer, etag };
  }

  #send(method: string, path: string, safeToRepeat: boolean, init: Request) {
    return withRetries(
      () => this.#transport(method, path, init),
      safeToRepeat,
      this.#retry,
      this.#environment,
      init.signal,
    );
  }

  /** An answer of 2xx; an error answer (after the retries) thrown as its JobschedError. */
  async #call(method: string, path: string, safeToRepeat: boolean, init: Request) {
    const answer = await this.#send(method, path, safeToRepeat, init);
    if (answer.status >= 400) throw errorOf(answer.status, answer.body, retryAfterSecondsOf(answer.headers));
    return answer;
  }

  #parse<T extends z.ZodType>(schema: T, answer: { status: number; body: unknown }): z.output<T> {
    const parsed = schema.safeParse(answer.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new UnexpectedResponseError(
        answer.status,
        "UnexpectedResponse",
        `the API's answer does not match the client's contract${issue ? ` at ${issue.path.join(".") || "(root)"}: ${issue.message}` : ""}`,
      );
    }
    return parsed.data;
  }
}

/**
 * An If-Match header from a version: a number (the job's `version`) or a bare version string
 * becomes its ETag (`"3"`); an ETag as the API sent it (`"3"`, `W/"3"`), a list of them or `*`
 * goes as given.
 */
function ifMatchHeader(version: number | string): string {
  const text = String(version).trim();
  return /^\d+$/.test(text) ? `"${text}"` : text;
}

/** Pages from `first` on: `read(cursor)` for each, while the page before had a cursor. */
async function* pages<T extends { cursor?: string }>(
  first: string | undefined,
  read: (cursor: string | undefined) => Promise<T>,
): AsyncIterable<T> {
  let cursor = first;
  do {
    const page = await read(cursor);
    yield page;
    cursor = page.cursor;
  } while (cursor !== undefined);
}
