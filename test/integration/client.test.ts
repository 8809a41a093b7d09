import {
  ConflictError,
  JobschedClient,
  NotFoundError,
  PreconditionFailedError,
  ValidationError,
} from "@jobsched/client";
import { leasesResponse } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * @jobsched/client against the real handlers behind the SigV4-checking local gateway
 * (dynalite, fauxqs): every /api/v1 route through its typed method, each answer checked by the
 * client against the contract (and by the gateway against the OpenAPI document), errors typed.
 */
let stack: TestStack;
let api: TestApi;
let client: JobschedClient;
let other: JobschedClient;

beforeAll(async () => {
  stack = await createTestStack("client");
  api = await startTestApi(stack);
  client = new JobschedClient({ transport: api.tenantA });
  other = new JobschedClient({ transport: api.tenantB });
});
afterAll(() => api.close());

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

describe("the client on the local stack", () => {
  it("creates, reads, lists, updates with ifMatch, pauses, resumes and cancels a job", async () => {
    const created = await client.createJob({
      type: "client-test",
      cron: "0 9 * * MON-FRI",
      timeZone: "Europe/London",
      labels: { team: "billing" },
      idempotencyKey: "client-test-1",
    });
    expect(created.created).toBe(true);
    expect(
      (
        await client.createJob({
          type: "client-test",
          cron: "0 9 * * MON-FRI",
          timeZone: "Europe/London",
          labels: { team: "billing" },
          idempotencyKey: "client-test-1",
        })
      ).created,
    ).toBe(false);

    const job = await client.getJob(created.jobId);
    expect(job).toMatchObject({ jobId: created.jobId, status: "active", labels: { team: "billing" } });

    const listed = await client.listJobs({ labels: { team: "billing" } });
    expect(listed.jobs.map((j) => j.jobId)).toContain(created.jobId);

    const updated = await client.updateJob(
      created.jobId,
      { cron: "0 10 * * MON-FRI" },
      { ifMatch: job.version },
    );
    expect(updated.job.cron).toBe("0 10 * * MON-FRI");
    expect(updated.changed).toContain("cron");
    // The version read before the update is stale now.
    await expect(
      client.updateJob(created.jobId, { cron: "0 11 * * *" }, { ifMatch: job.version }),
    ).rejects.toBeInstanceOf(PreconditionFailedError);

    expect((await client.pauseJob(created.jobId, { reason: "maintenance" })).status).toBe("paused");
    expect((await client.resumeJob(created.jobId)).status).toBe("active");
    expect((await client.cancelJob(created.jobId)).status).toBe("cancelled");
    await expect(client.resumeJob(created.jobId)).rejects.toBeInstanceOf(ConflictError);
  });

  it("names the field of a bad input, and keeps tenants apart (another's job is not found)", async () => {
    const refused = await client
      .createJob({ type: "client-test", runAt: "tomorrow" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused).toMatchObject({ status: 400, code: "ValidationError", field: "runAt" });

    const { jobId } = await client.createJob({ type: "client-test", runAt: inMinutes(30) });
    await expect(other.getJob(jobId)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.cancelJob(jobId)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("creates in bulk with a result per item, and pages through a listing and an export", async () => {
    const jobs = Array.from({ length: 5 }, (_, i) => ({ type: "client-bulk", runAt: inMinutes(60 + i) }));
    const batch = await other.createJobs([...jobs, { type: "client-bulk", cron: "not a cron" }], {
      idempotencyKey: "client-bulk-1",
    });
    expect(batch).toMatchObject({ created: 5, failed: 1 });
    expect(batch.results[5]).toMatchObject({ index: 5, status: 400, error: { field: "jobs.5.cron" } });

    const pages: string[][] = [];
    for await (const page of other.listJobsPages({ type: "client-bulk", limit: 2 }))
      pages.push(page.jobs.map((j) => j.jobId));
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);

    const exported: string[] = [];
    for await (const page of other.exportJobs({ type: "client-bulk" }))
      exported.push(...page.jobs.map((j) => `${j.jobId} ${j.runAt}`));
    expect(exported).toHaveLength(5);
    expect(new Set(exported.map((line) => line.split(" ")[0]))).toEqual(new Set(pages.flat()));
  });

  it("triggers, backfills, lists runs, previews, handles the webhook secret and reads the OpenAPI document", async () => {
    const { jobId } = await client.createJob({ type: "client-runs", cron: "*/5 * * * *" });
    const run = await client.triggerJob(jobId);
    expect(run).toMatchObject({ status: "pending", origin: "manual" });

    const backfill = await client.backfillJob(jobId, {
      from: new Date(Date.now() - 16 * 60_000).toISOString(),
      to: new Date(Date.now() - 60_000).toISOString(),
    });
    expect(backfill.firings).toBeGreaterThanOrEqual(2);
    expect(backfill.created).toBe(backfill.firings);

    const runs = await client.listRuns(jobId);
    expect(runs.runs.map((r) => r.runId)).toContain(run.runId);
    // The cron may also fire while the test runs (a five-minute boundary): count only the runs asked for.
    const asked = runs.runs.filter((r) => r.origin === "manual" || r.origin === "backfill");
    expect(asked).toHaveLength(1 + backfill.created);

    const preview = await client.previewSchedule({ cron: "30 1 * * *", timeZone: "Europe/London", count: 3 });
    expect(preview.runs).toHaveLength(3);

    const secret = await client.rotateWebhookSecret();
    expect(secret.secret).toMatch(/^whsec_/);
    const shown = await client.getWebhookSecret();
    expect(shown).toEqual({ createdAt: secret.createdAt });

    const document = await client.openApiDocument();
    expect(document).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
  });

  it("lists a dead letter and replays it, one and all", async () => {
    const { jobId } = await other.createJob({
      type: "client-dlq",
      runAt: new Date(Date.now() + 1_000).toISOString(),
    });
    let lease: { runId: string; fence: number } | undefined;
    for (let tries = 0; lease === undefined && tries < 30; tries++) {
      const answer = await api.workerB("POST", "/internal/leases", {
        body: { workerId: "client-test", types: ["client-dlq"], max: 1, waitSeconds: 1 },
      });
      lease = bodyOf(leasesResponse, answer)[0];
    }
    if (lease === undefined) throw new Error("no run leased");
    const failed = await api.workerB("POST", `/internal/leases/${lease.runId}/complete`, {
      body: { fence: lease.fence, result: "failed", retryable: false, error: "bad input" },
    });
    expect(failed.status).toBe(200);

    const letters = await other.listDeadLetters();
    expect(letters.deadLetters).toEqual([expect.objectContaining({ jobId, error: "bad input" })]);
    const replayed = await other.replayDeadLetter(lease.runId);
    expect(replayed).toMatchObject({ runId: lease.runId, replays: 1 });
    await expect(client.replayDeadLetter(lease.runId)).rejects.toBeInstanceOf(NotFoundError);
    expect(await other.replayAllDeadLettersUntilDone()).toEqual({
      replayed: 0,
      skippedPaused: 0,
      complete: true,
    });
  });
});
