import {
  backfillResponse,
  createJobResponse,
  errorResponse,
  jobResponse,
  jobsPageResponse,
  leasesResponse,
  previewResponse,
  runResponse,
  updateJobResponse,
} from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Issue 18's schedule options end to end, through the local gateway, the real handlers, dynalite
 * and fauxqs: a DST policy and a jitter window on a job (stored, shown, previewed, run), and a
 * pause with its reason.
 */
let stack: TestStack;
let api: TestApi;

beforeAll(async () => {
  stack = await createTestStack("schedule-features");
  api = await startTestApi(stack);
});
afterAll(() => api.close());

async function create(body: Record<string, unknown>) {
  const response = await api.tenantA("POST", "/api/v1/jobs", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return bodyOf(createJobResponse, response);
}
const getJob = async (jobId: string) =>
  bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));

describe("DST policy", () => {
  it("is stored and shown on the job, and the preview of the job's schedule runs a repeated time twice", async () => {
    const { jobId } = await create({
      type: "nightly",
      cron: "30 1 * * *",
      timeZone: "Europe/London",
      dstPolicy: "every-occurrence",
    });
    expect(await getJob(jobId)).toMatchObject({ dstPolicy: "every-occurrence", timeZone: "Europe/London" });

    const preview = await api.tenantA("GET", "/api/v1/schedules/preview", {
      query: {
        cron: "30 1 * * *",
        timeZone: "Europe/London",
        dstPolicy: "every-occurrence",
        from: "2026-10-25T00:00:00Z",
        count: "3",
      },
    });
    expect(bodyOf(previewResponse, preview).runs.map((r) => [r.at, r.dst])).toEqual([
      ["2026-10-25T00:30:00Z", "repeated"],
      ["2026-10-25T01:30:00Z", "second-occurrence"],
      ["2026-10-26T01:30:00Z", undefined],
    ]);
  });

  it("shows the default on a cron job created without one, and refuses one on an interval, writing nothing", async () => {
    const { jobId } = await create({ type: "nightly", cron: "0 2 * * *", timeZone: "Europe/Berlin" });
    expect((await getJob(jobId)).dstPolicy).toBe("first-occurrence");

    const before = await api.tenantA("GET", "/api/v1/jobs", { query: { type: "hourly-dst" } });
    const refused = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "hourly-dst", interval: { every: "1h" }, dstPolicy: "skip-gap" },
    });
    expect(refused.status).toBe(400);
    expect(bodyOf(errorResponse, refused).error.field).toBe("dstPolicy");
    expect((await api.tenantA("GET", "/api/v1/jobs", { query: { type: "hourly-dst" } })).body).toEqual(
      before.body,
    );
  });
});

describe("jitter", () => {
  it("runs a one-off at its job's stable offset inside the window: the preview, nextRunAt and the leased run agree", async () => {
    const runAt = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString().replace(".000Z", "Z");
    const created = await create({ type: "jittered", runAt, jitter: "PT4S" });
    const nextRunAt = Date.parse(created.nextRunAt as string);
    expect(nextRunAt).toBeGreaterThanOrEqual(Date.parse(runAt));
    expect(nextRunAt).toBeLessThan(Date.parse(runAt) + 4_000);

    const preview = bodyOf(
      previewResponse,
      await api.tenantA("GET", "/api/v1/schedules/preview", {
        query: { runAt, jitter: "PT4S", jobId: created.jobId, from: runAt },
      }),
    );
    expect(preview.runs).toHaveLength(1);
    expect(preview.runs[0]).toMatchObject({ at: created.nextRunAt, firing: runAt });
    expect(await getJob(created.jobId)).toMatchObject({ jitter: "PT4S", runAt });

    const leased = [];
    for (let i = 0; i < 5 && leased.length === 0; i++) {
      const response = await api.worker("POST", "/internal/leases", {
        body: { workerId: "w-jitter", types: ["jittered"], max: 1, waitSeconds: 5 },
      });
      leased.push(...bodyOf(leasesResponse, response));
    }
    expect(leased).toHaveLength(1);
    expect(leased[0]?.scheduledFor).toBe(created.nextRunAt);
  });

  it("refuses a window over a day, naming the field", async () => {
    const refused = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "jittered", cron: "0 * * * *", jitter: "P2D" },
    });
    expect(refused.status).toBe(400);
    expect(bodyOf(errorResponse, refused).error.field).toBe("jitter");
  });
});

describe("pause with a reason", () => {
  it("shows the reason while paused, keeps it in the audit trail, and drops it on resume", async () => {
    const { jobId } = await create({ type: "reasoned", cron: "0 9 * * *" });
    const paused = await api.tenantA("POST", `/api/v1/jobs/${jobId}/pause`, {
      body: { reason: "billing freeze until the audit ends" },
    });
    expect(bodyOf(jobResponse, paused)).toMatchObject({
      status: "paused",
      pauseReason: "billing freeze until the audit ends",
    });
    const resumed = bodyOf(jobResponse, await api.tenantA("POST", `/api/v1/jobs/${jobId}/resume`));
    expect(resumed.status).toBe("active");
    expect(resumed.pauseReason).toBeUndefined();
    expect(resumed.audit.map((entry) => [entry.action, entry.reason])).toEqual([
      ["created", undefined],
      ["paused", "billing freeze until the audit ends"],
      ["resumed", undefined],
    ]);
  });

  it("refuses a reason that is too long or not text, and leaves the job as it was", async () => {
    const { jobId } = await create({ type: "reasoned", cron: "0 9 * * *" });
    for (const body of [{ reason: "x".repeat(257) }, { reason: 42 }, { why: "typo" }]) {
      const refused = await api.tenantA("POST", `/api/v1/jobs/${jobId}/pause`, { body });
      expect(refused.status).toBe(400);
      expect(bodyOf(errorResponse, refused).error.field).toBe("reason" in body ? "reason" : "why");
    }
    const job = await getJob(jobId);
    expect(job.status).toBe("active");
    expect(job.audit).toHaveLength(1);
  });
});

/** Leases for a type until `count` arrived (or five polls passed). */
async function leaseAll(type: string, count: number) {
  const leased = [];
  for (let i = 0; i < 5 && leased.length < count; i++) {
    const response = await api.worker("POST", "/internal/leases", {
      body: { workerId: "w-manual", types: [type], max: 10, waitSeconds: 2 },
    });
    leased.push(...bodyOf(leasesResponse, response));
  }
  return leased;
}

describe("trigger and backfill", () => {
  it("triggers a run now under its own run key; a worker runs it and the history shows it as manual", async () => {
    const { jobId } = await create({ type: "manual-run", cron: "0 0 1 1 *" });
    const triggered = await api.tenantA("POST", `/api/v1/jobs/${jobId}/trigger`, { body: {} });
    expect(triggered.status).toBe(201);
    const run = bodyOf(runResponse, triggered);
    expect(run).toMatchObject({ status: "pending", origin: "manual" });

    const [lease, ...more] = await leaseAll("manual-run", 1);
    expect(more).toEqual([]);
    expect(lease?.runKey).toBe(run.runKey);
    const done = await api.worker("POST", `/internal/leases/${lease?.runId}/complete`, {
      body: { fence: lease?.fence, result: "succeeded" },
    });
    expect(done.status).toBe(200);
    expect((await getJob(jobId)).runs).toMatchObject([
      { runKey: run.runKey, status: "succeeded", origin: "manual" },
    ]);

    await api.tenantA("POST", `/api/v1/jobs/${jobId}/pause`);
    const refused = await api.tenantA("POST", `/api/v1/jobs/${jobId}/trigger`);
    expect(refused.status).toBe(409);
  });

  it("backfills a fall-back night as the job's DST policy says, once each even when called twice, and runs them despite maxLateness", async () => {
    const { jobId } = await create({
      type: "backfilled",
      cron: "30 1 * * *",
      timeZone: "Europe/London",
      dstPolicy: "every-occurrence",
      maxLateness: "PT1M",
    });
    const range = { from: "2026-10-24T12:00:00Z", to: "2026-10-26T12:00:00Z" };
    const first = await api.tenantA("POST", `/api/v1/jobs/${jobId}/backfill`, { body: range });
    expect(bodyOf(backfillResponse, first)).toMatchObject({ firings: 3, created: 3, rerun: 0, existing: 0 });
    const second = await api.tenantA("POST", `/api/v1/jobs/${jobId}/backfill`, { body: range });
    expect(bodyOf(backfillResponse, second)).toMatchObject({ firings: 3, created: 0, existing: 3 });

    const leased = await leaseAll("backfilled", 3);
    expect(leased.map((l) => l.scheduledFor).sort()).toEqual([
      "2026-10-25T00:30:00Z",
      "2026-10-25T01:30:00Z",
      "2026-10-26T01:30:00Z",
    ]);
    const refused = await api.tenantA("POST", `/api/v1/jobs/${jobId}/backfill`, {
      body: { from: "2026-10-24T12:00:00Z", to: "2999-01-01T00:00:00Z" },
    });
    expect(refused.status).toBe(400);
    expect(bodyOf(errorResponse, refused).error.field).toBe("to");
  });
});

describe("update in place (PATCH with ETag / If-Match)", () => {
  it("moves a cron to another zone across a DST week: the answer shows the runs before and after", async () => {
    // New York moves to EDT on 2027-03-14, London to BST only on 2027-03-28.
    const { jobId } = await create({
      type: "zoned",
      cron: "0 9 * * *",
      timeZone: "America/New_York",
      startAt: "2027-03-10T00:00:00Z",
    });
    const read = await api.tenantA("GET", `/api/v1/jobs/${jobId}`);
    expect(read.headers?.get("etag")).toBe('"1"');

    const response = await api.tenantA("PATCH", `/api/v1/jobs/${jobId}`, {
      body: { timeZone: "Europe/London" },
      headers: { "if-match": '"1"' },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.headers?.get("etag")).toBe('"2"');
    const updated = bodyOf(updateJobResponse, response);
    expect(updated.changed).toEqual(["timeZone"]);
    expect(updated.nextRunsBefore.map((r) => r.at)).toEqual([
      "2027-03-10T14:00:00Z",
      "2027-03-11T14:00:00Z",
      "2027-03-12T14:00:00Z",
      "2027-03-13T14:00:00Z",
      "2027-03-14T13:00:00Z",
    ]);
    expect(updated.nextRunsAfter.map((r) => r.at)).toEqual([
      "2027-03-10T09:00:00Z",
      "2027-03-11T09:00:00Z",
      "2027-03-12T09:00:00Z",
      "2027-03-13T09:00:00Z",
      "2027-03-14T09:00:00Z",
    ]);
    expect(updated.job).toMatchObject({
      jobId,
      timeZone: "Europe/London",
      cron: "0 9 * * *",
      startAt: "2027-03-10T00:00:00Z",
      nextRunAt: "2027-03-10T09:00:00Z",
      version: 2,
    });
    expect(updated.job.audit.at(-1)).toMatchObject({ action: "updated", fields: ["timeZone"] });
  });

  it("refuses a stale ETag with 412 and changes nothing; fields left out are kept", async () => {
    const { jobId } = await create({
      type: "etag",
      cron: "*/5 * * * *",
      payload: { to: "ops" },
      maxAttempts: 3,
    });
    const first = await api.tenantA("PATCH", `/api/v1/jobs/${jobId}`, {
      body: { payload: { to: "billing" } },
      headers: { "if-match": '"1"' },
    });
    expect(first.status).toBe(200);
    const stale = await api.tenantA("PATCH", `/api/v1/jobs/${jobId}`, {
      body: { maxAttempts: 9 },
      headers: { "if-match": '"1"' },
    });
    expect(stale.status).toBe(412);
    expect(bodyOf(errorResponse, stale).error.field).toBe("If-Match");
    const job = await getJob(jobId);
    expect(job).toMatchObject({
      payload: { to: "billing" },
      maxAttempts: 3,
      cron: "*/5 * * * *",
      version: 2,
    });
  });

  it("keeps the job id, type and run history; refuses a type change and bad input with a 400 naming the field", async () => {
    const { jobId } = await create({ type: "kept", cron: "0 0 1 1 *" });
    await api.tenantA("POST", `/api/v1/jobs/${jobId}/trigger`, { body: {} });
    const switched = await api.tenantA("PATCH", `/api/v1/jobs/${jobId}`, {
      body: { interval: { every: "2h" } },
    });
    expect(switched.status).toBe(200);
    const job = bodyOf(updateJobResponse, switched).job;
    expect(job).toMatchObject({ jobId, type: "kept", interval: { every: "PT2H" } });
    expect(job.cron).toBeUndefined();
    expect(job.runs).toHaveLength(1); // the triggered run, still in the history

    for (const [body, field] of [
      [{ type: "other" }, "type"],
      [{ cron: "61 * * * *" }, "cron"],
      [{ jitter: "P9D" }, "jitter"],
      [{}, "body"],
    ] as const) {
      const refused = await api.tenantA("PATCH", `/api/v1/jobs/${jobId}`, { body });
      expect(refused.status).toBe(400);
      expect(bodyOf(errorResponse, refused).error.field).toBe(field);
    }
    expect((await getJob(jobId)).version).toBe(2);
  });
});

describe("labels", () => {
  it("are kept on the job, filter the listing (every pair must match), merge key by key on update, and stay within the tenant", async () => {
    const make = async (labels: Record<string, string>) =>
      (await create({ type: "labelled", cron: "0 9 * * *", labels })).jobId;
    const billingProd = await make({ team: "billing", env: "prod" });
    const billingDev = await make({ team: "billing", env: "dev" });
    await make({ team: "search", env: "prod" });
    await api.tenantB("POST", "/api/v1/jobs", {
      body: { type: "labelled", cron: "0 9 * * *", labels: { team: "billing", env: "prod" } },
    });

    const list = async (query: Record<string, string>) =>
      bodyOf(jobsPageResponse, await api.tenantA("GET", "/api/v1/jobs", { query }));
    expect((await list({ label: "team=billing" })).jobs.map((j) => j.jobId)).toEqual([
      billingDev,
      billingProd,
    ]);
    expect((await list({ label: "team=billing,env=prod" })).jobs.map((j) => j.jobId)).toEqual([billingProd]);
    expect((await list({ label: "team=billing", status: "paused" })).jobs).toEqual([]);

    // Paging through a label: one at a time, newest first, with the cursor it gives.
    const first = await list({ label: "team=billing", limit: "1" });
    expect(first.jobs.map((j) => j.jobId)).toEqual([billingDev]);
    const second = await list({ label: "team=billing", limit: "1", cursor: first.cursor ?? "" });
    expect(second.jobs.map((j) => j.jobId)).toEqual([billingProd]);

    const patched = await api.tenantA("PATCH", `/api/v1/jobs/${billingDev}`, {
      body: { labels: { team: null, tier: "gold" } },
    });
    expect(bodyOf(updateJobResponse, patched).job.labels).toEqual({ env: "dev", tier: "gold" });
    expect((await list({ label: "team=billing" })).jobs.map((j) => j.jobId)).toEqual([billingProd]);
    expect((await list({ label: "tier=gold" })).jobs.map((j) => j.jobId)).toEqual([billingDev]);

    for (const [query, field] of [
      [{ label: "team" }, "label"],
      [{ label: "team=a=b" }, "label"],
    ] as const) {
      const refused = await api.tenantA("GET", "/api/v1/jobs", { query });
      expect(refused.status).toBe(400);
      expect(bodyOf(errorResponse, refused).error.field).toBe(field);
    }
    const badLabel = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "labelled", cron: "0 9 * * *", labels: { "bad key": "x" } },
    });
    expect(badLabel.status).toBe(400);
    expect(bodyOf(errorResponse, badLabel).error.field).toMatch(/^labels/);
  });
});
