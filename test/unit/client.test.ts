import {
  ConflictError,
  JobschedClient,
  JobschedError,
  type JsonResponse,
  NotFoundError,
  PreconditionFailedError,
  ServerError,
  ThrottledError,
  type Transport,
  type TransportRequest,
  UnexpectedResponseError,
  ValidationError,
} from "@jobsched/client";
import { describe, expect, it } from "vitest";

/**
 * @jobsched/client against a scripted transport: which answers it retries (and how long it
 * waits), the typed errors it throws, how it checks answers, and the requests it builds.
 */
interface Sent {
  readonly method: string;
  readonly path: string;
  readonly init: TransportRequest;
}

const job = {
  jobId: "j_00000000000000000000",
  type: "send-invoice",
  status: "active",
  createdAt: "2026-12-01T00:00:00Z",
  updatedAt: "2026-12-01T00:00:00Z",
};
/** A job in full, as GET /api/v1/jobs/{jobId} answers it. */
const fullJob = {
  ...job,
  payload: null,
  missedRuns: "run-once",
  overlapPolicy: "allow",
  delivery: "at-least-once",
  labels: {},
  maxAttempts: 5,
  retry: { base: "PT10S", cap: "PT1H" },
  leaseSeconds: 30,
  createdBy: "arn:aws:iam::000000000000:role/tenant-a",
  version: 1,
  audit: [],
  runs: [],
};
const answer = (status: number, body: unknown, headers: Record<string, string> = {}): JsonResponse => ({
  status,
  body,
  headers: new Headers(headers),
});
const apiError = (code: string, message: string, field?: string) => ({
  error: { code, message, ...(field ? { field } : {}) },
});

/** A client whose transport answers from `script` in turn (an Error is thrown as a network failure). */
function scripted(script: Array<JsonResponse | Error>, retry = {}) {
  const sent: Sent[] = [];
  const waits: number[] = [];
  const transport: Transport = async (method, path, init = {}) => {
    sent.push({ method, path, init });
    const next = script.shift();
    if (next === undefined) throw new Error("the script ran out");
    if (next instanceof Error) throw next;
    return next;
  };
  const client = new JobschedClient({
    transport,
    retry,
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  return { client, sent, waits };
}

describe("retries", () => {
  it("retries a 429 on any call, waiting at least its Retry-After", async () => {
    const { client, sent, waits } = scripted([
      answer(429, apiError("QuotaExceeded", "slow down"), { "retry-after": "3" }),
      answer(201, { runId: "r", runKey: "k", scheduledFor: "x", status: "pending", attempt: 0, fence: 0 }),
    ]);
    await expect(client.triggerJob("j_1")).resolves.toMatchObject({ runId: "r", status: "pending" });
    expect(sent).toHaveLength(2);
    expect(waits).toEqual([3_000]);
  });

  it("backs off with equal jitter, doubling, when the answer gives no Retry-After", async () => {
    const { client, waits } = scripted([answer(503, "busy"), answer(503, "busy"), answer(200, fullJob)], {
      backoff: { baseMs: 1_000, capMs: 10_000 },
    });
    await client.getJob(job.jobId);
    // retryDelayMs with random 0.5: 3/4 of min(cap, base x 2^(n-1)).
    expect(waits).toEqual([750, 1_500]);
  });

  it("hands back a Retry-After longer than it waits out, as a ThrottledError carrying it", async () => {
    const { client, sent } = scripted([
      answer(429, apiError("QuotaExceeded", "over the create quota"), { "retry-after": "60" }),
    ]);
    const error = await client.getJob(job.jobId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThrottledError);
    expect(error).toMatchObject({ status: 429, code: "QuotaExceeded", retryAfterSeconds: 60 });
    expect(sent).toHaveLength(1);
  });

  it("retries a 5xx and a network failure of a call safe to repeat, up to its attempts", async () => {
    const { client, sent } = scripted(
      [new Error("ECONNRESET"), answer(500, apiError("InternalError", "boom"))],
      {
        attempts: 2,
      },
    );
    const error = await client.getJob(job.jobId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(sent).toHaveLength(2);
  });

  it("does not repeat a create without an idempotency key, nor a trigger, after a 5xx or a network failure", async () => {
    const create = scripted([answer(502, { message: "Bad Gateway" })]);
    await expect(
      create.client.createJob({ type: "t", runAt: "2026-12-24T09:00:00Z" }),
    ).rejects.toBeInstanceOf(ServerError);
    expect(create.sent).toHaveLength(1);
    const trigger = scripted([new Error("socket hang up")]);
    await expect(trigger.client.triggerJob("j_1")).rejects.toThrow("socket hang up");
    expect(trigger.sent).toHaveLength(1);
    const rotate = scripted([answer(500, apiError("InternalError", "x"))]);
    await expect(rotate.client.rotateWebhookSecret()).rejects.toBeInstanceOf(ServerError);
    expect(rotate.sent).toHaveLength(1);
  });

  it("repeats a create with an idempotency key, and a batch with one, after a 5xx", async () => {
    const create = scripted([answer(500, "x"), answer(201, { jobId: job.jobId })]);
    await expect(
      create.client.createJob({ type: "t", runAt: "2026-12-24T09:00:00Z", idempotencyKey: "k1" }),
    ).resolves.toEqual({ jobId: job.jobId, created: true });
    expect(create.sent).toHaveLength(2);
    const batch = {
      created: 0,
      existing: 1,
      failed: 0,
      results: [{ index: 0, status: 200, jobId: job.jobId }],
    };
    const keyed = scripted([answer(500, "x"), answer(200, batch)]);
    await keyed.client.createJobs([{ type: "t" }], { idempotencyKey: "b1" });
    expect(keyed.sent).toHaveLength(2);
    const unkeyed = scripted([answer(500, "x")]);
    await expect(unkeyed.client.createJobs([{ type: "t" }])).rejects.toBeInstanceOf(ServerError);
    expect(unkeyed.sent).toHaveLength(1);
  });

  it("does not retry a 4xx other than 429", async () => {
    const { client, sent } = scripted([answer(409, apiError("ConflictError", "the job is cancelled"))]);
    await expect(client.resumeJob("j_1")).rejects.toBeInstanceOf(ConflictError);
    expect(sent).toHaveLength(1);
  });
});

describe("errors", () => {
  it("throws the error class of the status, with the API's code, message and field", async () => {
    const { client } = scripted([
      answer(400, apiError("ValidationError", "runAt: must be ISO 8601", "runAt")),
    ]);
    const error = await client.createJob({ type: "t", runAt: "tomorrow" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toBeInstanceOf(JobschedError);
    expect(error).toMatchObject({
      status: 400,
      code: "ValidationError",
      field: "runAt",
      message: "runAt: must be ISO 8601",
      name: "ValidationError",
    });
  });

  it("reads the gateway's own refusals ({ message }) and bodies that are not JSON", async () => {
    const { client } = scripted([answer(403, { message: "Forbidden" }), answer(404, "no route")]);
    await expect(client.getJob("j_1")).rejects.toMatchObject({
      status: 403,
      code: "HTTP403",
      message: "Forbidden",
    });
    const notFound = await client.getJob("j_2").catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toMatchObject({ message: "HTTP 404: no route" });
  });

  it("refuses a 2xx answer the contract does not describe, naming where", async () => {
    const { client } = scripted([answer(200, { ...fullJob, status: "sleeping" })]);
    const error = await client.getJob(job.jobId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect((error as Error).message).toContain("at status");
  });
});

describe("requests", () => {
  it("sends an update's ifMatch as the ETag of that version", async () => {
    const { client, sent } = scripted([
      answer(412, apiError("PreconditionFailed", "the job is at version 4")),
    ]);
    await expect(client.updateJob("j_1", { cron: "0 9 * * *" }, { ifMatch: 3 })).rejects.toBeInstanceOf(
      PreconditionFailedError,
    );
    expect(sent[0]).toMatchObject({
      method: "PATCH",
      path: "/api/v1/jobs/j_1",
      init: { body: { cron: "0 9 * * *" }, headers: { "if-match": '"3"' } },
    });
  });

  it("sends an ETag, a list of them or * as given, and a bare version as its ETag", async () => {
    const { client, sent } = scripted(
      Array.from({ length: 4 }, () => answer(412, apiError("PreconditionFailed", "moved on"))),
    );
    for (const ifMatch of ['"3"', '"3", "4"', "*", "7"])
      await client.updateJob("j_1", {}, { ifMatch }).catch(() => undefined);
    expect(sent.map((s) => s.init.headers?.["if-match"])).toEqual(['"3"', '"3", "4"', "*", '"7"']);
  });

  it("builds a listing's query from labels, the API's label form, a limit and a cursor; ids are escaped", async () => {
    const page = { jobs: [], cursor: undefined };
    const { client, sent } = scripted([answer(200, page), answer(200, fullJob)]);
    await client.listJobs({ labels: { team: "billing", env: "prod" }, label: "a=b", limit: 5, cursor: "c1" });
    expect(sent[0]?.init.query).toEqual({
      status: undefined,
      type: undefined,
      label: "a=b,team=billing,env=prod",
      limit: "5",
      cursor: "c1",
    });
    await client.getJob("j_1/../x");
    expect(sent[1]?.path).toBe("/api/v1/jobs/j_1%2F..%2Fx");
  });

  it("iterates pages until one has no cursor, each from the cursor before", async () => {
    const summary = (n: number) => ({ ...job, jobId: `j_${n}` });
    const { client, sent } = scripted([
      answer(200, { jobs: [summary(1)], cursor: "p2" }),
      answer(200, { jobs: [summary(2)], cursor: "p3" }),
      answer(200, { jobs: [summary(3)] }),
    ]);
    const seen: string[] = [];
    for await (const page of client.listJobsPages({ limit: 1 })) seen.push(...page.jobs.map((j) => j.jobId));
    expect(seen).toEqual(["j_1", "j_2", "j_3"]);
    expect(sent.map((s) => s.init.query?.cursor)).toEqual([undefined, "p2", "p3"]);
  });

  it("tells a created job from an idempotent repeat", async () => {
    const { client } = scripted([answer(201, { jobId: "j_1" }), answer(200, { jobId: "j_1" })]);
    expect((await client.createJob({ type: "t", idempotencyKey: "k" })).created).toBe(true);
    expect((await client.createJob({ type: "t", idempotencyKey: "k" })).created).toBe(false);
  });

  it("replays every dead letter, calling again while the API says more remain", async () => {
    const { client, sent } = scripted([
      answer(200, { replayed: 100, skippedPaused: 1, complete: false }),
      answer(200, { replayed: 20, skippedPaused: 1, complete: true }),
    ]);
    const rounds: number[] = [];
    const total = await client.replayAllDeadLettersUntilDone({ onProgress: (t) => rounds.push(t.replayed) });
    expect(total).toEqual({ replayed: 120, skippedPaused: 1, complete: true });
    expect(rounds).toEqual([100, 120]);
    expect(sent).toHaveLength(2);
  });

  it("gives up replaying after three requests in a row that replayed nothing and were not complete", async () => {
    const stuck = { replayed: 0, skippedPaused: 0, complete: false };
    const { client, sent } = scripted([answer(200, stuck), answer(200, stuck), answer(200, stuck)]);
    expect(await client.replayAllDeadLettersUntilDone()).toEqual(stuck);
    expect(sent).toHaveLength(3);
  });

  it("stops replaying after maxRequests, so runs that fail straight back are not replayed for ever", async () => {
    const churning = { replayed: 5, skippedPaused: 0, complete: false };
    const { client, sent } = scripted(Array.from({ length: 5 }, () => answer(200, churning)));
    expect(await client.replayAllDeadLettersUntilDone({ maxRequests: 4 })).toEqual({
      replayed: 20,
      skippedPaused: 0,
      complete: false,
    });
    expect(sent).toHaveLength(4);
  });
});
