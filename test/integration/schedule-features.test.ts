import {
  createJobResponse,
  errorResponse,
  jobResponse,
  leasesResponse,
  previewResponse,
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
