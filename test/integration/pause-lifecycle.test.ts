import { GetCommand } from "@aws-sdk/lib-dynamodb";
import type { ErrorResponse, Lease } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runKey } from "../../lambdas/adapters/dynamo/run-item";
import { parseRunId } from "../../lambdas/core/ids";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Pausing and resuming a job whose last run already exists (issue 15): the run a pause kept
 * from starting, a run that ended during the pause, and dead letters of a paused job. Through
 * the local gateway, the real handlers, dynalite and fauxqs.
 */
/** Any answer: its fields read loosely, an error one as the contract shapes it. */
type Body = Record<string, unknown> & Partial<ErrorResponse>;
type LeaseBody = Lease;

let stack: TestStack;
let api: TestApi;

beforeAll(async () => {
  stack = await createTestStack("pause-lifecycle");
  api = await startTestApi(stack);
});
afterAll(() => api.close());

const soon = () => new Date(Date.now() + 1_000).toISOString();

async function createOneOff(type: string, extra: Record<string, unknown> = {}) {
  const response = await api.tenantA("POST", "/api/v1/jobs", { body: { type, runAt: soon(), ...extra } });
  expect(response.status).toBe(201);
  return String((response.body as Body).jobId);
}
async function job(jobId: string) {
  return (await api.tenantA("GET", `/api/v1/jobs/${jobId}`)).body as Body & {
    runs: Array<{ runKey: string; status: string; error?: string }>;
  };
}
const control = async (jobId: string, action: "pause" | "resume") =>
  (await api.tenantA("POST", `/api/v1/jobs/${jobId}/${action}`)).body as Body;
/** One lease request of a worker for `type`: the leases it was given. */
async function lease(type: string): Promise<LeaseBody[]> {
  const response = await api.worker("POST", "/internal/leases", {
    body: { workerId: "w-pause", types: [type], max: 10, waitSeconds: 2 },
  });
  expect(response.status).toBe(200);
  return response.body as LeaseBody[];
}
/** The run's item as stored. */
async function runItem(runId: string) {
  const key = parseRunId(runId);
  if (!key) throw new Error(`not a run id: ${runId}`);
  const { Item } = await stack.db.send(
    new GetCommand({ TableName: stack.config.tableName, Key: runKey(key.jobId, key.scheduledFor) }),
  );
  return Item;
}
async function complete(run: LeaseBody, result: "succeeded" | "failed", retryable = true) {
  const response = await api.worker("POST", `/internal/leases/${run.runId}/complete`, {
    body: { fence: run.fence, result, ...(result === "failed" ? { retryable, error: "boom" } : {}) },
  });
  expect(response.status).toBe(200);
}

describe("pause and resume of a job whose last run exists", () => {
  it("runs a one-off's run that the pause kept from starting, under the same run key, and completes the job", async () => {
    const jobId = await createOneOff("paused-one-off");
    expect(await control(jobId, "pause")).toMatchObject({ status: "paused" });
    // The queued run reaches a worker while the job is paused: recorded missed, not handed out.
    expect(await lease("paused-one-off")).toEqual([]);
    const missed = await job(jobId);
    expect(missed.runs).toMatchObject([
      { status: "missed", error: "the job was paused before the run started" },
    ]);
    const runKey = missed.runs[0]?.runKey;

    expect(await control(jobId, "resume")).toMatchObject({ status: "active" });
    const [run, ...more] = await lease("paused-one-off");
    expect(more).toEqual([]);
    expect(run?.runKey).toBe(runKey);
    await complete(run as LeaseBody, "succeeded");
    const done = await job(jobId);
    expect(done.status).toBe("completed");
    expect(done.runs).toMatchObject([{ runKey, status: "succeeded" }]);
  });

  it("completes a one-off under missedRuns skip instead, its run left missed", async () => {
    const jobId = await createOneOff("paused-skip", { missedRuns: "skip" });
    await control(jobId, "pause");
    expect(await lease("paused-skip")).toEqual([]);
    expect(await control(jobId, "resume")).toMatchObject({ status: "completed" });
    expect(await lease("paused-skip")).toEqual([]);
    expect((await job(jobId)).runs).toMatchObject([{ status: "missed" }]);
  });

  it("completes a job whose last run ended while it was paused", async () => {
    const jobId = await createOneOff("ended-in-pause");
    const [run] = await lease("ended-in-pause");
    expect(run).toBeDefined();
    await control(jobId, "pause");
    await complete(run as LeaseBody, "succeeded"); // the worker had it before the pause
    expect((await job(jobId)).status).toBe("paused");
    expect(await control(jobId, "resume")).toMatchObject({ status: "completed" });
  });
});

describe("dead letters of a paused job", () => {
  it("refuses to replay one (409) and skips them in replay-all, until the job is resumed", async () => {
    // A recurring job (its first firing now, the next in an hour) stays active past a dead letter.
    const response = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "paused-dead-letter", interval: { every: "1h" }, startAt: soon(), maxAttempts: 1 },
    });
    const jobId = String((response.body as Body).jobId);
    const [run] = await lease("paused-dead-letter");
    await complete(run as LeaseBody, "failed", false);
    expect((await job(jobId)).runs).toMatchObject([{ status: "dead-lettered" }]);
    // A finished run (a dead letter too) expires after the retention, through the table's TTL.
    const expiresAt = async () => (await runItem(String(run?.runId)))?.expiresAt;
    const finished = await runItem(String(run?.runId));
    expect(await expiresAt()).toBe(
      Math.floor(Number(finished?.finishedAt) / 1000) + stack.config.settings.runRetentionDays * 86_400,
    );
    await control(jobId, "pause");

    const one = await api.tenantA("POST", `/api/v1/dead-letters/${run?.runId}/replay`);
    expect(one.status).toBe(409);
    expect((one.body as Body).error).toMatchObject({ code: "Conflict", field: "runId" });
    const all = await api.tenantA("POST", "/api/v1/dead-letters/replay");
    expect(all.body).toMatchObject({ skippedPaused: 1, complete: true });
    expect((await job(jobId)).runs).toMatchObject([{ status: "dead-lettered" }]);

    await control(jobId, "resume");
    const replayed = await api.tenantA("POST", `/api/v1/dead-letters/${run?.runId}/replay`);
    expect(replayed.status).toBe(200);
    expect(await expiresAt()).toBeUndefined(); // replayed: kept until it finishes again
    const [again] = await lease("paused-dead-letter");
    expect(again?.runKey).toBe(run?.runKey);
  });
});
