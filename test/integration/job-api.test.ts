import type { ErrorResponse } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { OffsetClock } from "../support/offset-clock";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Every endpoint of the job API through the local gateway (SigV4 checked), the real handlers,
 * dynalite and fauxqs. The scheduler's clock can be moved forward, so minutes pass in moments.
 */
/** Any answer: its fields read loosely, an error one as the contract shapes it. */
type Body = Record<string, unknown> & Partial<ErrorResponse>;

const MINUTE = 60_000;
/**
 * The scheduler's clock for the whole file. It only ever moves forward: the tests share one
 * stack, whose sweep cursors follow the clock (a sweep reads due buckets from its group's
 * cursor on), so moving it back would hide a later test's due jobs from the sweep whenever
 * they hash to a group an earlier test swept further ahead (seen once in this stop's CI runs).
 */
const clock = new OffsetClock();
let stack: TestStack;
let api: TestApi;

beforeAll(async () => {
  // One firing's run a sweep: these tests move the scheduler's clock by minutes, while SQS counts
  // a block's delays in real time (blocks, decision 0044, have tests of their own).
  stack = await createTestStack("job-api", { clock, settings: { advanceBlockSeconds: 0 } });
  api = await startTestApi(stack);
});
afterAll(() => api.close());

const sweepJob = (jobId: string) => sweepGroup(stack.deps, Math.floor(shardOf(jobId) / SHARDS_PER_GROUP));
const inMinutes = (m: number) => new Date(clock.now() + m * MINUTE).toISOString();

async function create(body: Record<string, unknown>, as = api.tenantA) {
  const response = await as("POST", "/api/v1/jobs", { body });
  return { status: response.status, body: response.body as Body };
}
async function get(path: string, as = api.tenantA, query?: Record<string, string>) {
  const response = await as("GET", path, { query });
  return { status: response.status, body: response.body as Body };
}
async function post(path: string, as = api.tenantA) {
  const response = await as("POST", path);
  return { status: response.status, body: response.body as Body };
}

describe("creating and reading jobs", () => {
  it("creates one-off, cron and interval jobs and shows each with its definition and next run", async () => {
    const once = await create({ type: "send-invoice", payload: { invoiceId: 8812 }, runAt: inMinutes(60) });
    const cron = await create({
      type: "daily-digest",
      cron: "0 9 * * MON-FRI",
      timeZone: "Europe/London",
      maxAttempts: 8,
    });
    const every = await create({
      type: "poll",
      interval: { every: "15m" },
      missedRuns: "skip",
      maxLateness: "PT5M",
    });
    expect([once.status, cron.status, every.status]).toEqual([201, 201, 201]);

    const digest = await get(`/api/v1/jobs/${cron.body.jobId}`);
    expect(digest.body).toMatchObject({
      status: "active",
      cron: "0 9 * * MON-FRI",
      timeZone: "Europe/London",
      nextRunAt: cron.body.nextRunAt,
      maxAttempts: 8,
      missedRuns: "run-once",
      audit: [{ action: "created", by: "arn:aws:iam::000000000000:role/tenant-a" }],
      runs: [],
    });
    const poll = await get(`/api/v1/jobs/${every.body.jobId}`);
    expect(poll.body).toMatchObject({
      interval: { every: "PT15M" },
      missedRuns: "skip",
      maxLateness: "PT5M",
    });
    expect(Date.parse(String(every.body.nextRunAt)) % (15 * MINUTE)).toBe(0);
  });

  it("lists the caller's jobs newest first, a page at a time, filtered by status and type", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(String((await create({ type: "listing", runAt: inMinutes(90 + i) })).body.jobId));
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await get("/api/v1/jobs", api.tenantA, {
        type: "listing",
        limit: "2",
        ...(cursor ? { cursor } : {}),
      });
      expect(page.status).toBe(200);
      const jobs = page.body.jobs as Array<{ jobId: string; type: string }>;
      expect(jobs.length).toBeLessThanOrEqual(2);
      seen.push(...jobs.map((j) => j.jobId));
      cursor = page.body.cursor as string | undefined;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    const paused = await get("/api/v1/jobs", api.tenantA, { status: "paused", type: "listing" });
    expect(paused.body.jobs).toEqual([]);
  });

  it("keeps tenants apart: another tenant's job is 404 everywhere and absent from its list", async () => {
    const mine = await create({ type: "private", runAt: inMinutes(30) });
    const path = `/api/v1/jobs/${mine.body.jobId}`;
    const answers = await Promise.all([
      get(path, api.tenantB),
      get(`${path}/runs`, api.tenantB),
      post(`${path}/pause`, api.tenantB),
      post(`${path}/resume`, api.tenantB),
      api.tenantB("DELETE", path),
    ]);
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404, 404, 404]);
    const theirs = await get("/api/v1/jobs", api.tenantB, { type: "private" });
    expect(theirs.body.jobs).toEqual([]);
    expect((await get(path)).body.status).toBe("active"); // and nothing changed
  });

  it("lets workers call only /internal/* and tenants only /api/*", async () => {
    expect((await get("/api/v1/jobs", api.worker)).status).toBe(403);
    expect(
      (await api.tenantA("POST", "/internal/leases", { body: { workerId: "w", types: ["x"] } })).status,
    ).toBe(403);
    expect(
      (
        await api.worker("POST", "/internal/leases", {
          body: { workerId: "w", types: ["none"], waitSeconds: 0 },
        })
      ).status,
    ).toBe(200);
  });
});

describe("idempotency", () => {
  it("returns the original job for the same key and body, and 409 for the same key with another body", async () => {
    const body = {
      type: "send-invoice",
      runAt: inMinutes(120),
      idempotencyKey: "invoice-8812",
      payload: { n: 1 },
    };
    const first = await create(body);
    const again = await create(body);
    const different = await create({ ...body, payload: { n: 2 } });
    expect([first.status, again.status, different.status]).toEqual([201, 200, 409]);
    expect(again.body.jobId).toBe(first.body.jobId);
    expect(different.body.error).toMatchObject({ code: "IdempotencyConflict", field: "idempotencyKey" });
  });

  it("creates exactly one job from ten concurrent identical requests", async () => {
    const body = { type: "concurrent", runAt: inMinutes(120), idempotencyKey: "same-everywhere" };
    const answers = await Promise.all(Array.from({ length: 10 }, () => create(body)));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(9);
    expect(new Set(answers.map((a) => a.body.jobId)).size).toBe(1);
    expect((await get("/api/v1/jobs", api.tenantA, { type: "concurrent" })).body.jobs).toHaveLength(1);
  });
});

describe("pause, resume and cancel", () => {
  it("a paused every-minute job creates no runs; on resume its missed-run policy applies; cancelled, it never runs again", async () => {
    // Prepare: an every-minute job whose missed firings run once.
    const created = await create({ type: "every-minute", cron: "* * * * *", missedRuns: "run-once" });
    const jobId = String(created.body.jobId);
    const runs = async () =>
      ((await get(`/api/v1/jobs/${jobId}/runs`, api.tenantA, { limit: "100" })).body.runs as Array<{
        status: string;
        scheduledFor: string;
      }>) ?? [];
    clock.advance(MINUTE);
    await sweepJob(jobId);
    const before = (await runs()).length;
    expect(before).toBeGreaterThan(0);

    // Act: pause, let five minutes pass, sweep.
    const paused = await post(`/api/v1/jobs/${jobId}/pause`);
    expect(paused.body).toMatchObject({ status: "paused" });
    clock.advance(5 * MINUTE);
    await sweepJob(jobId);
    expect((await runs()).filter((r) => r.status !== "missed")).toHaveLength(before);

    // Resume: the five firings that fell in the pause become one run and four missed records.
    const resumed = await post(`/api/v1/jobs/${jobId}/resume`);
    expect(resumed.body).toMatchObject({ status: "active" });
    await sweepJob(jobId);
    const afterResume = await runs();
    expect(afterResume.filter((r) => r.status === "missed").length).toBeGreaterThanOrEqual(3);
    expect(afterResume.filter((r) => r.status === "pending").length).toBeGreaterThanOrEqual(1);
    expect(afterResume.length - before).toBeGreaterThanOrEqual(5);

    // Cancel: no run starts afterwards, even ones already queued.
    const cancelled = await api.tenantA("DELETE", `/api/v1/jobs/${jobId}`);
    expect(cancelled.status).toBe(200);
    clock.advance(5 * MINUTE);
    await sweepJob(jobId);
    expect((await runs()).length).toBe(afterResume.length);
    const leases = await api.worker("POST", "/internal/leases", {
      body: { workerId: "w", types: ["every-minute"], max: 10, waitSeconds: 1 },
    });
    expect(leases.body).toEqual([]);
    expect((await runs()).some((r) => r.status === "cancelled")).toBe(true);

    // The audit trail names who did what.
    const job = await get(`/api/v1/jobs/${jobId}`);
    expect((job.body.audit as Array<{ action: string }>).map((a) => a.action)).toEqual([
      "created",
      "paused",
      "resumed",
      "cancelled",
    ]);
  });

  it("repeats an action harmlessly and refuses what the state forbids", async () => {
    const { body } = await create({ type: "control", runAt: inMinutes(60) });
    const path = `/api/v1/jobs/${body.jobId}`;
    expect((await post(`${path}/pause`)).status).toBe(200);
    expect((await post(`${path}/pause`)).status).toBe(200);
    expect((await api.tenantA("DELETE", path)).status).toBe(200);
    expect((await api.tenantA("DELETE", path)).status).toBe(200);
    const resume = await post(`${path}/resume`);
    expect(resume.status).toBe(409);
    expect(resume.body.error).toMatchObject({ code: "Conflict", field: "jobId" });
  });

  it("pages through a job's run history", async () => {
    const { body } = await create({ type: "history", cron: "* * * * *", missedRuns: "catch-up" });
    const jobId = String(body.jobId);
    clock.advance(12 * MINUTE);
    await sweepJob(jobId);
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await get(`/api/v1/jobs/${jobId}/runs`, api.tenantA, {
        limit: "5",
        ...(cursor ? { cursor } : {}),
      });
      all.push(...(page.body.runs as Array<{ scheduledFor: string }>).map((r) => r.scheduledFor));
      cursor = page.body.cursor as string | undefined;
    } while (cursor);
    expect(all.length).toBeGreaterThanOrEqual(12);
    expect([...all].sort().reverse()).toEqual(all); // newest first, no duplicates
    expect(new Set(all).size).toBe(all.length);
  });
});
