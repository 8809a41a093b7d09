import { createJobResponse, MAX_LEASE_SECONDS } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMessageOf } from "../../lambdas/core/delivery";
import type { Lease } from "../../lambdas/core/use-cases/lease-runs";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Issue 13: no single run can break a lease request, on the local stack, where the gateway
 * holds handlers to Lambda's 6 MB response and the SQS client to SQS's limits (our own checks
 * of AWS's rules: local/http-gateway.ts, local/sqs-aws-limits.ts).
 */
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

describe("a lease request no single run can break", () => {
  let stack: TestStack;
  let api: TestApi;

  beforeAll(async () => {
    stack = await createTestStack("fragility");
    api = await startTestApi(stack);
  });
  afterAll(() => api.close());

  async function create(body: Record<string, unknown>): Promise<string> {
    const response = await api.tenantA("POST", "/api/v1/jobs", { body });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return bodyOf(createJobResponse, response).jobId;
  }

  const lease = (types: string[], max: number, waitSeconds = 1) =>
    api.worker("POST", "/internal/leases", { body: { workerId: "w", types, max, waitSeconds } });

  it("delivers 100 runs with 256 KiB payloads to requests of max 100: no 5xx, each exactly once, no attempt lost", {
    timeout: 120_000,
  }, async () => {
    const blob = "x".repeat(256 * 1024 - 64);
    const runAt = inSeconds(3);
    const jobIds = new Set<string>();
    for (let i = 0; i < 100; i += 10) {
      const batch = Array.from({ length: 10 }, (_, k) =>
        create({ type: "heavy", runAt, payload: { n: i + k, blob } }),
      );
      for (const id of await Promise.all(batch)) jobIds.add(id);
    }
    const got: Lease[] = [];
    const statuses: number[] = [];
    const deadline = Date.now() + 90_000;
    while (got.length < 100 && Date.now() < deadline) {
      const response = await lease(["heavy"], 100);
      statuses.push(response.status);
      if (response.status !== 200) continue;
      const leases = response.body as Array<Lease & { payload: { blob: string } }>;
      for (const l of leases) expect(l.payload.blob).toHaveLength(blob.length);
      got.push(...leases);
    }
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(got).toHaveLength(100);
    expect(new Set(got.map((l) => l.jobId))).toEqual(jobIds);
    expect(got.every((l) => l.attempt === 1 && l.fence === 1)).toBe(true);
    const completions = await Promise.all(
      got.map((l) =>
        api.worker("POST", `/internal/leases/${l.runId}/complete`, {
          body: { fence: l.fence, result: "succeeded" },
        }),
      ),
    );
    expect(completions.map((c) => c.status)).toEqual(Array(100).fill(200));
  });

  it("leases and completes a job at the largest allowed leaseSeconds", { timeout: 30_000 }, async () => {
    const jobId = await create({ type: "long", runAt: inSeconds(2), leaseSeconds: MAX_LEASE_SECONDS });
    let granted: Lease | undefined;
    const deadline = Date.now() + 15_000;
    while (!granted && Date.now() < deadline) {
      const response = await lease(["long"], 1);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      [granted] = response.body as Lease[];
    }
    expect(granted?.jobId).toBe(jobId);
    const leaseMs = Date.parse(granted?.leaseExpiresAt ?? "") - Date.now();
    expect(leaseMs).toBeGreaterThan((MAX_LEASE_SECONDS - 60) * 1000);
    const beat = await api.worker("POST", `/internal/leases/${granted?.runId}/heartbeat`, {
      body: { fence: granted?.fence },
    });
    expect(beat.status).toBe(200);
    const done = await api.worker("POST", `/internal/leases/${granted?.runId}/complete`, {
      body: { fence: granted?.fence, result: "succeeded" },
    });
    expect(done.body).toMatchObject({ status: "succeeded" });
  });

  it("never polls longer than waitSeconds for a retry an hour away whose message is visible", {
    timeout: 40_000,
  }, async () => {
    // A run fails and is retried after an hour's backoff: the retry's message waits out SQS's
    // 15-minute delay and then shows up, still most of an hour early.
    const jobId = await create({ type: "later", runAt: inSeconds(1), retry: { base: 3600, cap: 7200 } });
    let first: Lease | undefined;
    const deadline = Date.now() + 10_000;
    while (!first && Date.now() < deadline) [first] = (await lease(["later"], 1)).body as Lease[];
    const failed = await api.worker("POST", `/internal/leases/${first?.runId}/complete`, {
      body: { fence: first?.fence, result: "failed", error: "try in an hour" },
    });
    expect(failed.body).toMatchObject({ status: "retrying" });
    const run = (await stack.deps.runs.listRecentRuns(jobId, 1))[0];
    if (!run?.retryAt) throw new Error("no retry");
    expect(run.retryAt - Date.now()).toBeGreaterThan(1_700_000);
    await stack.deps.queue.send([{ message: runMessageOf(run), delaySeconds: 0 }]);
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const response = await api.worker("POST", "/internal/leases", {
        body: { workerId: "w", types: ["later"], max: 10, waitSeconds: 2 },
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2_000 + 1_500);
    }
  });

  it("answers a request holding a run within a poll although another of its lanes is empty", {
    timeout: 60_000,
  }, async () => {
    // Two lanes of one type for the pool worker (tenants A and B), both empty to begin with.
    for (const tenant of [api.tenantA, api.tenantB]) {
      const response = await tenant("POST", "/api/v1/jobs", {
        body: { type: "two-lanes", runAt: inSeconds(1) },
      });
      expect(response.status).toBe(201);
    }
    let drained = 0;
    const deadline = Date.now() + 15_000;
    while (drained < 2 && Date.now() < deadline) {
      const response = await api.pool("POST", "/internal/leases", {
        body: { workerId: "w", types: ["two-lanes"], max: 10, waitSeconds: 1 },
      });
      for (const l of response.body as Lease[]) {
        drained += 1;
        await api.pool("POST", `/internal/leases/${l.runId}/complete`, {
          body: { fence: l.fence, result: "succeeded" },
        });
      }
    }
    expect(drained).toBe(2);
    await new Promise((done) => setTimeout(done, 2_500)); // both lanes in the lease step's lane list

    // A's run becomes visible about two seconds into a 20 s long poll; B's lane stays empty.
    const dueAt = Math.ceil((Date.now() + 7_000) / 1000) * 1000;
    const jobId = await create({ type: "two-lanes", runAt: new Date(dueAt).toISOString() });
    const response = await api.pool("POST", "/internal/leases", {
      body: { workerId: "w", types: ["two-lanes"], max: 10, waitSeconds: 20 },
      signal: AbortSignal.timeout(30_000),
    });
    const answeredAt = Date.now();
    const leases = response.body as Lease[];
    expect(leases.map((l) => l.jobId)).toEqual([jobId]);
    // Handed over as soon as it was leased, its lead ahead of its second (the worker holds it
    // until startAt), and not after B's empty lane's 20 s.
    expect(answeredAt).toBeLessThan(dueAt);
    expect(dueAt - answeredAt).toBeLessThanOrEqual(6_500);
    expect(Date.parse(leases[0]?.startAt ?? "")).toBe(dueAt);
  });
});
