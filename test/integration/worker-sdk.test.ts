import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Lease } from "@jobsched/contract";
import { createJobResponse, jobResponse } from "@jobsched/contract";
import { type CompletionReport, createWorker, type LeasedRun, PermanentError } from "@jobsched/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, type TestStack } from "../support/stack";

/** The worker SDK against the local stack: heartbeats, outcomes, draining. */
describe("createWorker", () => {
  let stack: TestStack;
  let api: TestApi;
  const credentials = loadLocalCredentials();

  beforeAll(async () => {
    stack = await createTestStack("worker-sdk");
    api = await startTestApi(stack);
  });
  afterAll(() => api.close());

  const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
  const reports: Array<{ runKey: string } & CompletionReport> = [];
  const worker = (types: string[], handler: (run: LeasedRun) => Promise<void>) =>
    createWorker({
      onCompleted: (run, report) => reports.push({ runKey: run.runKey, ...report }),
      endpoint: api.url,
      region: credentials.region,
      credentials: credentials.first("worker"),
      types,
      concurrency: 4,
      stopOnSignals: false,
      log: () => undefined,
      handler,
    });
  const runsOf = async (jobId: string) =>
    bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`)).runs;

  it("heartbeats a handler that outlives its lease, completes it once, and passes the run key", {
    timeout: 30_000,
  }, async () => {
    const created = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "slow", runAt: inSeconds(1), leaseSeconds: 5, payload: { n: 1 } },
    });
    const jobId = bodyOf(createJobResponse, created).jobId;
    const seen: LeasedRun[] = [];
    const w = worker(["slow"], async (run) => {
      seen.push(run);
      await new Promise((done) => setTimeout(done, 8_000)); // longer than the 5 s lease
    });
    for (let i = 0; i < 100 && (await runsOf(jobId))[0]?.status !== "succeeded"; i++) {
      await new Promise((done) => setTimeout(done, 200));
    }
    await w.stop();
    expect(seen).toHaveLength(1); // never handed to anyone else: the heartbeats held the lease
    expect(seen[0]).toMatchObject({
      runKey: expect.stringMatching(new RegExp(`^${jobId}@`)),
      payload: { n: 1 },
    });
    expect((await runsOf(jobId))[0]).toMatchObject({ status: "succeeded", fence: 1 });
  });

  it("reports a PermanentError as a permanent failure and other errors as retryable", {
    timeout: 30_000,
  }, async () => {
    const post = (type: string) =>
      api.tenantA("POST", "/api/v1/jobs", {
        body: { type, runAt: inSeconds(1), maxAttempts: 2, retry: { base: 60 } },
      });
    const permanent = bodyOf(createJobResponse, await post("bad")).jobId;
    const transient = bodyOf(createJobResponse, await post("flaky-sdk")).jobId;
    const w = worker(["bad", "flaky-sdk"], async (run) => {
      throw run.type === "bad" ? new PermanentError("no such invoice") : new Error("timeout");
    });
    for (let i = 0; i < 100; i++) {
      const [a, b] = [(await runsOf(permanent))[0], (await runsOf(transient))[0]];
      if (a?.status === "dead-lettered" && b?.error === "timeout") break;
      await new Promise((done) => setTimeout(done, 200));
    }
    await w.stop();
    expect((await runsOf(permanent))[0]).toMatchObject({ status: "dead-lettered", error: "no such invoice" });
    expect((await runsOf(transient))[0]).toMatchObject({ status: "pending", error: "timeout", attempt: 1 });
    // Both completions were reported to the onCompleted hook as sent and accepted.
    const reported = reports.filter((r) => r.runKey.startsWith(permanent) || r.runKey.startsWith(transient));
    expect(reported.map((r) => [r.result, r.status]).sort()).toEqual([
      ["failed", 200],
      ["failed", 200],
    ]);
    expect(reported.every((r) => r.sentAt > Date.now() - 30_000 && r.sentAt <= Date.now())).toBe(true);
  });

  it("drains on stop: the run in hand finishes and is completed before done resolves", {
    timeout: 30_000,
  }, async () => {
    const created = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "drain", runAt: inSeconds(1) },
    });
    const jobId = bodyOf(createJobResponse, created).jobId;
    let started!: () => void;
    const inHand = new Promise<void>((done) => {
      started = done;
    });
    const w = worker(["drain"], async () => {
      started();
      await new Promise((done) => setTimeout(done, 1_000));
    });
    await inHand;
    expect(w.inFlight()).toBe(1);
    await w.stop();
    expect(w.inFlight()).toBe(0);
    expect((await runsOf(jobId))[0]).toMatchObject({ status: "succeeded" });
  });
});

describe("createWorker's hold and batching, against a scripted lease server", () => {
  it("holds leases handed over ahead until startAt, then completes the runs in one batched call", {
    timeout: 20_000,
  }, async () => {
    // Prepare: three leases handed over at once, due 1.5 s to 1.7 s from now.
    const due = Date.now() + 1_500;
    const leases = [0, 100, 200].map(
      (offset, i): Lease => ({
        runId: `r_0123456789abcdefghj${i}_1000`,
        runKey: `j_0123456789abcdefghj${i}@x`,
        jobId: `j_0123456789abcdefghj${i}`,
        type: "held",
        scheduledFor: new Date(due + offset).toISOString(),
        startAt: new Date(due + offset).toISOString(),
        attempt: 1,
        fence: 1,
        leaseExpiresAt: new Date(due + offset + 30_000).toISOString(),
        final: false,
        payload: null,
      }),
    );
    let leased = false;
    const calls: Array<{ url: string; body: Record<string, unknown> }> = [];
    const server = createServer((request, response) => {
      let text = "";
      request.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      request.on("end", () => {
        const body = JSON.parse(text || "{}") as Record<string, unknown>;
        calls.push({ url: request.url ?? "", body });
        response.writeHead(200, { "content-type": "application/json" });
        if (request.url === "/internal/leases") {
          response.end(JSON.stringify(leased ? [] : leases));
          leased = true;
          return;
        }
        const items = (body.completions ?? []) as Array<{ runId: string }>;
        response.end(
          JSON.stringify({
            results: items.map((item) => ({
              runId: item.runId,
              status: 200,
              result: { runId: item.runId, status: "succeeded" },
            })),
          }),
        );
      });
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    const startedAt = new Map<string, number>();
    const reports: CompletionReport[] = [];

    // Act
    const w = createWorker({
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      credentials: { accessKeyId: "AKIAEXAMPLEWORKER001", secretAccessKey: "not-checked-here" },
      types: ["held"],
      concurrency: 5,
      stopOnSignals: false,
      log: () => undefined,
      onCompleted: (_run, report) => reports.push(report),
      handler: async (run) => {
        startedAt.set(run.runId, Date.now());
        // Ends when the last one starts, so the three completions fall into one batch window.
        await new Promise((done) => setTimeout(done, Date.parse(leases[2]?.startAt ?? "") + 20 - Date.now()));
      },
    });
    for (let i = 0; i < 100 && reports.length < 3; i++) await new Promise((done) => setTimeout(done, 50));
    await w.stop();
    await new Promise((done) => server.close(done));

    // Assess: each started on its own startAt, never before; one completion request for all three.
    for (const lease of leases) {
      const at = startedAt.get(lease.runId) ?? 0;
      expect(at).toBeGreaterThanOrEqual(Date.parse(lease.startAt));
      expect(at - Date.parse(lease.startAt)).toBeLessThan(100);
    }
    const completionCalls = calls.filter((c) => c.url === "/internal/completions");
    expect(completionCalls).toHaveLength(1);
    // The three handlers end on one timer: their completions share a batch, in any order.
    expect(completionCalls[0]?.body.completions).toEqual(
      expect.arrayContaining(
        leases.map((lease) => ({ runId: lease.runId, fence: 1, result: "succeeded", final: false })),
      ),
    );
    expect(completionCalls[0]?.body.completions).toHaveLength(3);
    expect(reports.map((r) => r.status)).toEqual([200, 200, 200]);
  });
});

describe("createWorker against a lease server that is down for a while", () => {
  it("keeps retrying a completion well past the eight tries of its other calls, so the outcome is not lost", {
    timeout: 20_000,
  }, async () => {
    const lease: Lease = {
      runId: "r_0123456789abcdefghjk_1000",
      runKey: "j_0123456789abcdefghjk@1970-01-01T00:00:01Z",
      jobId: "j_0123456789abcdefghjk",
      type: "outage",
      scheduledFor: new Date().toISOString(),
      startAt: new Date().toISOString(),
      attempt: 1,
      fence: 1,
      leaseExpiresAt: new Date(Date.now() + 30_000).toISOString(),
      final: false,
      payload: null,
    };
    let leased = false;
    let completionTries = 0;
    const server = createServer((request, response) => {
      const answer = (status: number, body: unknown) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(body));
      };
      request.resume();
      if (request.url === "/internal/leases") {
        const first = !leased;
        leased = true;
        return answer(200, first ? [lease] : []);
      }
      completionTries += 1;
      // Down (a restart, then another) for the first 20 tries.
      return completionTries <= 20
        ? answer(503, { message: "Service Unavailable" })
        : answer(200, {
            results: [
              { runId: lease.runId, status: 200, result: { runId: lease.runId, status: "succeeded" } },
            ],
          });
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    const reports: CompletionReport[] = [];
    const w = createWorker({
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      credentials: { accessKeyId: "AKIAEXAMPLEWORKER001", secretAccessKey: "not-checked-here" },
      types: ["outage"],
      stopOnSignals: false,
      log: () => undefined,
      callBackoff: { baseMs: 2, capMs: 20 },
      onCompleted: (_run, report) => reports.push(report),
      handler: async () => undefined,
    });
    for (let i = 0; i < 200 && reports.length === 0; i++) await new Promise((done) => setTimeout(done, 50));
    await w.stop();
    await new Promise((done) => server.close(done));
    expect(completionTries).toBe(21);
    expect(reports).toEqual([expect.objectContaining({ result: "succeeded", status: 200 })]);
  });
});
