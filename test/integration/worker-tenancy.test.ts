import { jobResponse } from "@jobsched/contract";
import type { SignedFetch } from "@jobsched/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import type { Lease } from "../../lambdas/core/use-cases/lease-runs";
import { ROUTES } from "../../lambdas/definitions/routes";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, laneMessageStates, type TestStack } from "../support/stack";

/**
 * Issue 13 on the local stack (dynalite, fauxqs, the real handlers behind the SigV4-checking
 * gateway, the dev credentials' worker bindings): a worker sees only its tenants' runs.
 */
const credentials = loadLocalCredentials();
const TENANT_A = "arn:aws:iam::000000000000:role/tenant-a";
const TENANT_B = "arn:aws:iam::000000000000:role/tenant-b";
/** A tenant no dev worker serves. */
const TENANT_C = "arn:aws:iam::000000000000:role/tenant-c";
const RUNS_PER_TENANT = 1_000;

describe("workers bound to tenants", () => {
  let stack: TestStack;
  let api: TestApi;

  beforeAll(async () => {
    // No creates-a-second quota: a fast machine creates 1,000 jobs a tenant faster than the
    // default 200 a second, and quotas are not what this test is about.
    stack = await createTestStack("tenancy", { settings: { tenantCreatesPerSecond: 0 } });
    api = await startTestApi(stack);
  });
  afterAll(() => api.close());

  /** `count` one-off jobs of `type` for `tenant`, due in two seconds, created as the API does. */
  async function createRuns(tenant: string, type: string, count: number): Promise<Set<string>> {
    const runAt = new Date(Date.now() + 2_000).toISOString();
    const caller = { tenant, principal: tenant };
    const ids = new Set<string>();
    for (let i = 0; i < count; i += 50) {
      const batch = Array.from({ length: Math.min(50, count - i) }, () =>
        createJob(stack.deps, caller, { type, runAt }),
      );
      for (const { jobId } of await Promise.all(batch)) ids.add(jobId);
    }
    return ids;
  }

  /** Leases runs of `type` until `enough` says so or the deadline passes. */
  async function leaseAll(
    worker: SignedFetch,
    type: string,
    enough: (leases: readonly Lease[]) => boolean,
    deadline: number,
  ) {
    const leases: Lease[] = [];
    while (!enough(leases) && Date.now() < deadline) {
      const response = await worker("POST", "/internal/leases", {
        body: { workerId: "w", types: [type], max: 100, waitSeconds: 1 },
      });
      expect(response.status).toBe(200);
      leases.push(...(response.body as Lease[]));
    }
    return leases;
  }

  it("never gives tenant B's worker tenant A's runs, nor A's worker B's (1,000 runs each, one type)", {
    timeout: 120_000,
  }, async () => {
    const [ofA, ofB] = await Promise.all([
      createRuns(TENANT_A, "shared", RUNS_PER_TENANT),
      createRuns(TENANT_B, "shared", RUNS_PER_TENANT),
    ]);
    const deadline = Date.now() + 90_000;
    const enough = (leases: readonly Lease[]) => leases.length >= RUNS_PER_TENANT;
    const [byB, byA] = await Promise.all([
      leaseAll(api.workerB, "shared", enough, deadline),
      leaseAll(api.worker, "shared", enough, deadline),
    ]);
    expect(byB.filter((lease) => !ofB.has(lease.jobId))).toEqual([]);
    expect(byA.filter((lease) => !ofA.has(lease.jobId))).toEqual([]);
    expect(new Set(byB.map((l) => l.jobId)).size).toBe(RUNS_PER_TENANT);
    expect(new Set(byA.map((l) => l.jobId)).size).toBe(RUNS_PER_TENANT);
  });

  it("answers B's worker 404 on A's run, heartbeat and completion alike, and changes nothing", {
    timeout: 30_000,
  }, async () => {
    const [jobId] = await createRuns(TENANT_A, "private", 1);
    const [lease] = await leaseAll(api.worker, "private", (l) => l.length > 0, Date.now() + 10_000);
    if (!lease || lease.jobId !== jobId) throw new Error("A's worker did not lease A's run");
    const path = (action: string) => `/internal/leases/${lease.runId}/${action}`;
    const attempts = [
      await api.workerB("POST", path("heartbeat"), { body: { fence: lease.fence } }),
      await api.workerB("POST", path("complete"), { body: { fence: lease.fence, result: "succeeded" } }),
      await api.workerB("POST", path("complete"), {
        body: { fence: lease.fence, result: "failed", retryable: false, error: "B was here" },
      }),
      await api.workerB("POST", path("complete"), { body: { fence: lease.fence, result: "failed" } }),
    ];
    for (const answer of attempts) {
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ error: { code: "NotFound" } });
    }
    const job = await api.tenantA("GET", `/api/v1/jobs/${jobId}`);
    expect(bodyOf(jobResponse, job).runs).toEqual([
      expect.objectContaining({ status: "leased", fence: 1, attempt: 1 }),
    ]);
    // Its own worker completes it as if nothing happened.
    const done = await api.worker("POST", path("complete"), {
      body: { fence: lease.fence, result: "succeeded" },
    });
    expect(done.status).toBe(200);
  });

  it("lets a pool worker serve exactly the tenants it lists", { timeout: 60_000 }, async () => {
    const [ofA, ofB, ofC] = await Promise.all([
      createRuns(TENANT_A, "pooled", 20),
      createRuns(TENANT_B, "pooled", 20),
      createRuns(TENANT_C, "pooled", 20),
    ]);
    // Until A's and B's 40 are in, then a few seconds more in which C's must not come.
    const leases = await leaseAll(api.pool, "pooled", (l) => l.length >= 40, Date.now() + 20_000);
    leases.push(...(await leaseAll(api.pool, "pooled", () => false, Date.now() + 3_000)));
    const leased = new Set(leases.map((l) => l.jobId));
    expect(leased).toEqual(new Set([...ofA, ...ofB]));
    for (const jobId of ofC) expect(leased.has(jobId)).toBe(false);
    // C's runs were never leased nor touched by a lease step. A run made at a create is not
    // written until its lease, or until the lease step ends it unstarted (decision 0051), so: no
    // item for any of them, each still pending as its job shows it, and all 20 messages waiting
    // in C's lane, never received.
    const cRuns = await Promise.all([...ofC].map((jobId) => stack.deps.runs.listRecentRuns(jobId, 1)));
    expect(cRuns.flat()).toEqual([]);
    const caller = { tenant: TENANT_C, principal: TENANT_C };
    const cViews = await Promise.all([...ofC].map((jobId) => getJob(stack.deps, caller, jobId)));
    for (const view of cViews)
      expect(view.runs).toEqual([expect.objectContaining({ status: "pending", fence: 0, attempt: 0 })]);
    const cLane = await laneMessageStates(stack, "pooled", TENANT_C);
    expect({ waiting: cLane.visible + cLane.delayed, inFlight: cLane.inFlight }).toEqual({
      waiting: 20,
      inFlight: 0,
    });
  });

  it("answers a tenant's credential 403 on every /internal/* route", async () => {
    const internalRoutes = ROUTES.filter((route) => route.path.startsWith("/internal/"));
    expect(internalRoutes.length).toBeGreaterThanOrEqual(3);
    for (const tenant of [api.tenantA, api.tenantB]) {
      for (const route of internalRoutes) {
        const path = route.path.replace("{runId}", "r_0123456789abcdefghjk_1000");
        const answer = await tenant(route.method, path, { body: { workerId: "w", types: ["x"], fence: 1 } });
        expect(answer.status, `${route.method} ${path}`).toBe(403);
      }
    }
  });

  it("binds every dev worker credential to at least one tenant", () => {
    const workers = [...credentials.byAccessKey.values()].filter((c) => c.kind === "worker");
    expect(workers.length).toBeGreaterThanOrEqual(3);
    for (const worker of workers)
      expect(credentials.workerBindings.get(worker.principal)?.length).toBeGreaterThan(0);
  });
});
