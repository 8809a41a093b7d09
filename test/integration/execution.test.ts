import {
  completionResponse,
  createJobResponse,
  deadLettersPageResponse,
  heartbeatResponse,
  jobResponse,
} from "@jobsched/contract";
import type { SignedFetch } from "@jobsched/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Issue 6's guarantees on the local stack (dynalite, fauxqs, the real handlers behind the
 * SigV4-checking gateway, signed HTTP clients): lapsed leases and fencing, retries with
 * backoff, dead letters and replay, tenant fairness, and type separation.
 */
interface Lease {
  runId: string;
  runKey: string;
  jobId: string;
  type: string;
  attempt: number;
  fence: number;
  scheduledFor: string;
  startAt: string;
  leaseExpiresAt: string;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

describe("executing runs on the local stack", () => {
  let stack: TestStack;
  let api: TestApi;

  beforeAll(async () => {
    stack = await createTestStack("execution");
    api = await startTestApi(stack);
  });
  afterAll(() => api.close());

  async function create(client: SignedFetch, body: Record<string, unknown>): Promise<string> {
    const response = await client("POST", "/api/v1/jobs", { body });
    expect(response.status).toBe(201);
    return bodyOf(createJobResponse, response).jobId;
  }

  async function lease(types: string[], max = 10, workerId = "w"): Promise<Lease[]> {
    const response = await api.pool("POST", "/internal/leases", {
      body: { workerId, types, max, waitSeconds: 1 },
    });
    expect(response.status).toBe(200);
    return response.body as Lease[];
  }

  /** Leases one run and holds it until its startAt, as the worker SDK does; returns it and its start. */
  async function leaseUntil(types: string[], deadline: number, workerId = "w"): Promise<[Lease, number]> {
    while (Date.now() < deadline) {
      const [got] = await lease(types, 1, workerId);
      if (got) {
        await sleep(Date.parse(got.startAt) - Date.now());
        return [got, Date.now()];
      }
    }
    throw new Error(`nothing leased for ${types.join(",")} before the deadline`);
  }

  const complete = (run: Lease, body: Record<string, unknown>) =>
    api.pool("POST", `/internal/leases/${run.runId}/complete`, { body: { fence: run.fence, ...body } });

  it("hands a run whose worker stopped heartbeating to another within lease + 5 s, with a higher fence", {
    timeout: 40_000,
  }, async () => {
    const jobId = await create(api.tenantA, { type: "lapse", runAt: inSeconds(1), leaseSeconds: 5 });
    const [first] = await leaseUntil(["lapse"], Date.now() + 10_000, "w1");
    expect(first.fence).toBe(1);
    const beat = await api.pool("POST", `/internal/leases/${first.runId}/heartbeat`, {
      body: { fence: 1 },
    });
    expect(beat.status).toBe(200); // one heartbeat, then worker 1 goes silent
    const leaseEnd = Date.parse(bodyOf(heartbeatResponse, beat).leaseExpiresAt);

    const [second, leasedAt] = await leaseUntil(["lapse"], leaseEnd + 10_000, "w2");
    expect(second).toMatchObject({ runId: first.runId, runKey: first.runKey, fence: 2, attempt: 2 });
    expect(leasedAt).toBeGreaterThanOrEqual(leaseEnd);
    expect(leasedAt - leaseEnd).toBeLessThanOrEqual(5_000);

    const late = await complete(first, { result: "succeeded" });
    expect(late.status).toBe(409);
    const lateBeat = await api.pool("POST", `/internal/leases/${first.runId}/heartbeat`, {
      body: { fence: 1 },
    });
    expect(lateBeat.status).toBe(409);
    expect(
      (await complete(second, { result: "failed", retryable: false, error: "w2's outcome" })).status,
    ).toBe(200);
    const job = await api.tenantA("GET", `/api/v1/jobs/${jobId}`);
    expect(bodyOf(jobResponse, job).runs).toEqual([
      expect.objectContaining({ status: "dead-lettered", fence: 2, error: "w2's outcome" }),
    ]);
  });

  it("retries with the job's backoff, dead-letters after maxAttempts with the last error, and replays", {
    timeout: 60_000,
  }, async () => {
    const jobId = await create(api.tenantA, {
      type: "flaky",
      runAt: inSeconds(1),
      maxAttempts: 3,
      retry: { base: 2, cap: 4 },
    });
    const failedAt: number[] = [];
    const leasedAt: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [run, at] = await leaseUntil(["flaky"], Date.now() + 15_000);
      leasedAt.push(at);
      expect(run.attempt).toBe(attempt);
      const answer = await complete(run, { result: "failed", error: `attempt ${attempt} failed` });
      failedAt.push(Date.now());
      expect(bodyOf(completionResponse, answer).status).toBe(attempt < 3 ? "retrying" : "dead-lettered");
    }
    // Retry n waits min(cap, base * 2^(n-1)) with equal jitter: between half of that and all of it.
    for (const [n, ceiling] of [
      [1, 2_000],
      [2, 4_000],
    ] as const) {
      const waited = (leasedAt[n] ?? 0) - (failedAt[n - 1] ?? 0);
      expect(waited).toBeGreaterThanOrEqual(ceiling / 2 - 50);
      expect(waited).toBeLessThanOrEqual(ceiling + 1_000);
    }

    const dead = await api.tenantA("GET", "/api/v1/dead-letters");
    const letters = bodyOf(deadLettersPageResponse, dead).deadLetters;
    const letter = letters.find((l) => l.jobId === jobId);
    expect(letter?.error).toBe("attempt 3 failed (attempt 3 of 3)");
    expect(
      bodyOf(deadLettersPageResponse, await api.tenantB("GET", "/api/v1/dead-letters")).deadLetters,
    ).toEqual([]);

    const replay = await api.tenantA("POST", `/api/v1/dead-letters/${letter?.runId}/replay`);
    expect(replay.body).toMatchObject({ status: "pending", attempt: 0, replays: 1 });
    const [again] = await leaseUntil(["flaky"], Date.now() + 10_000);
    expect(again).toMatchObject({ runId: letter?.runId, attempt: 1, fence: 4 });
    expect((await complete(again, { result: "succeeded" })).status).toBe(200);
    const job = await api.tenantA("GET", `/api/v1/jobs/${jobId}`);
    expect(job.body).toMatchObject({ status: "completed", runs: [{ status: "succeeded" }] });
  });

  it("dead-letters a retryable: false failure at once", async () => {
    await create(api.tenantB, { type: "fatal", runAt: inSeconds(1) });
    const [run] = await leaseUntil(["fatal"], Date.now() + 10_000);
    const answer = await complete(run, { result: "failed", retryable: false, error: "bad input" });
    expect(answer.body).toMatchObject({ status: "dead-lettered" });
    const dead = await api.tenantB("GET", "/api/v1/dead-letters");
    expect(bodyOf(deadLettersPageResponse, dead).deadLetters).toEqual([
      expect.objectContaining({ runId: run.runId, error: "bad input", attempt: 1 }),
    ]);
  });

  it("leases tenant B's few runs on time while tenant A's backlog drains", { timeout: 60_000 }, async () => {
    const due = Math.ceil((Date.now() + 12_000) / 1000) * 1000;
    const runAt = new Date(due).toISOString();
    await Promise.all(Array.from({ length: 200 }, () => create(api.tenantA, { type: "fair", runAt })));
    await Promise.all(Array.from({ length: 10 }, () => create(api.tenantB, { type: "fair", runAt })));
    const lateness = { a: [] as number[], b: [] as number[] };
    const tenantOf = new Map<string, "a" | "b">();
    // Two slow workers: 5 runs per request, each run taking 100 ms.
    await Promise.all(
      [1, 2].map(async (w) => {
        while (lateness.a.length + lateness.b.length < 210 && Date.now() < due + 40_000) {
          const got = await lease(["fair"], 5, `fair-${w}`);
          // Held until due, as the worker SDK holds them; started together.
          const startedAt = Math.max(Date.now(), ...got.map((run) => Date.parse(run.startAt)));
          await sleep(startedAt - Date.now());
          for (const run of got) {
            const job = tenantOf.get(run.jobId) ?? (await whoOwns(run.jobId));
            tenantOf.set(run.jobId, job);
            lateness[job].push(startedAt - Date.parse(run.scheduledFor));
          }
          await sleep(100);
          await Promise.all(got.map((run) => complete(run, { result: "succeeded" })));
        }
      }),
    );
    expect(lateness.b).toHaveLength(10);
    expect(Math.max(...lateness.b)).toBeLessThanOrEqual(2_000);
    expect(Math.max(...lateness.a)).toBeGreaterThan(2_000); // A's backlog really was a backlog
  });

  async function whoOwns(jobId: string): Promise<"a" | "b"> {
    return (await api.tenantA("GET", `/api/v1/jobs/${jobId}`)).status === 200 ? "a" : "b";
  }

  it("never gives a worker of type X a run of type Y, and X's backlog does not delay Y", {
    timeout: 60_000,
  }, async () => {
    const due = Math.ceil((Date.now() + 12_000) / 1000) * 1000;
    const runAt = new Date(due).toISOString();
    await Promise.all(Array.from({ length: 150 }, () => create(api.tenantA, { type: "type-x", runAt })));
    await Promise.all(Array.from({ length: 5 }, () => create(api.tenantA, { type: "type-y", runAt })));
    const seenByX: string[] = [];
    const yLateness: number[] = [];
    const xWorker = (async () => {
      // A slow X worker: one run at a time.
      while (seenByX.length < 150 && Date.now() < due + 40_000) {
        for (const run of await lease(["type-x"], 1, "x-worker")) {
          seenByX.push(run.type);
          await sleep(50);
          await complete(run, { result: "succeeded" });
        }
      }
    })();
    while (yLateness.length < 5 && Date.now() < due + 20_000) {
      for (const run of await lease(["type-y"], 5, "y-worker")) {
        expect(run.type).toBe("type-y");
        yLateness.push(Date.now() - Date.parse(run.scheduledFor));
        await complete(run, { result: "succeeded" });
      }
    }
    await xWorker;
    expect(new Set(seenByX)).toEqual(new Set(["type-x"]));
    expect(seenByX).toHaveLength(150);
    expect(yLateness).toHaveLength(5);
    expect(Math.max(...yLateness)).toBeLessThanOrEqual(1_000);
  });
});
