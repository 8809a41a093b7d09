import { MAX_LEASE_SECONDS } from "@jobsched/contract";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LAMBDA_RESPONSE_LIMIT_BYTES, SAFE_VISIBILITY_SECONDS } from "../../lambdas/core/aws-limits";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import { NotFoundError } from "../../lambdas/core/errors";
import { leaseResponseBytes } from "../../lambdas/core/lease-budget";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { heartbeatRun } from "../../lambdas/core/use-cases/heartbeat-run";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { json } from "../../lambdas/handlers/http/responses";
import { knownRunsOf } from "../support/known-runs";
import { dueRun as dueRunOf, type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * Issue 13: workers see only their tenants' runs, and no single run can break a lease request
 * for the others in it (response byte budget, far-future messages, visibility limits, time).
 */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "tenant-a", principal: "arn:aws:iam::1:role/alice" };
const bob = { tenant: "tenant-b", principal: "arn:aws:iam::1:role/bob" };
const workerA = { principal: "arn:aws:iam::1:role/worker-a", tenants: ["tenant-a"] };
const workerB = { principal: "arn:aws:iam::1:role/worker-b", tenants: ["tenant-b"] };
const pool = { principal: "arn:aws:iam::1:role/pool", tenants: ["tenant-a", "tenant-b"] };

const dueRun = (deps: MemoryDeps, caller = alice, extra: Record<string, unknown> = {}) =>
  dueRunOf(deps, extra, caller);

/** The job's run as written: a made run (decision 0051) has no item until its lease. */
const runOf = (deps: MemoryDeps, jobId: string) =>
  [...deps.runs.runs.values()].find((r) => r.jobId === jobId);

/**
 * A made run not leased: no item was written for it (its lease writes the first one), so no
 * fence was raised; any message of it still queued carries it pending, fence 0.
 */
const expectUnleased = (deps: MemoryDeps, jobId: string) => {
  expect(runOf(deps, jobId)).toBeUndefined();
  expect(knownRunsOf(deps, jobId).filter((run) => run.status !== "pending" || run.fence !== 0)).toEqual([]);
};

/** The receipt handles of the jobs' messages among `received`. */
const handlesOf = (received: MemoryDeps["queue"]["ready"], jobIds: readonly string[]) =>
  received.filter((r) => r.message && jobIds.includes(r.message.jobId)).map((r) => r.receiptHandle);

describe("a worker bound to tenants", () => {
  it("leases only its tenants' runs; the others stay in their lanes, untouched", async () => {
    const deps = memoryDeps(NOW);
    const a = await dueRun(deps, alice);
    const b = await dueRun(deps, bob);
    const granted = await leaseRuns(deps, workerB, { workerId: "w", types: ["x"], max: 10 });
    expect(granted.map((g) => g.jobId)).toEqual([b]);
    // Alice's run is not leased (no item written) and its message is still in its lane.
    expect(runOf(deps, a)).toBeUndefined();
    expect(knownRunsOf(deps, a)).toMatchObject([{ status: "pending", fence: 0, attempt: 0 }]);
    expect(deps.queue.ready.map((r) => r.message?.jobId)).toEqual([a]);
  });

  it("a pool worker leases the runs of every tenant it lists", async () => {
    const deps = memoryDeps(NOW);
    const a = await dueRun(deps, alice);
    const b = await dueRun(deps, bob);
    const granted = await leaseRuns(deps, pool, { workerId: "w", types: ["x"], max: 10 });
    expect(granted.map((g) => g.jobId).sort()).toEqual([a, b].sort());
  });

  it("puts back a message filed under its tenant whose job is another tenant's", async () => {
    const deps = memoryDeps(NOW);
    const a = await dueRun(deps, alice);
    const [misfiled] = deps.queue.ready;
    if (!misfiled?.message) throw new Error("no message");
    deps.queue.ready[0] = { ...misfiled, message: { ...misfiled.message, tenant: "tenant-b" } };
    expect(await leaseRuns(deps, workerB, { workerId: "w", types: ["x"] })).toEqual([]);
    expectUnleased(deps, a);
    expect(deps.queue.released).toEqual([misfiled.receiptHandle]);
  });

  it("gets NotFound for another tenant's run on heartbeat and completion, and changes nothing", async () => {
    const deps = memoryDeps(NOW);
    const a = await dueRun(deps, alice);
    const [lease] = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"] });
    if (!lease) throw new Error("not leased");
    const before = runOf(deps, a);
    const body = { fence: lease.fence };
    await expect(heartbeatRun(deps, workerB, lease.runId, body)).rejects.toBeInstanceOf(NotFoundError);
    for (const outcome of [
      { result: "succeeded" },
      { result: "failed", retryable: false, error: "B says so" },
      { result: "failed", retryable: true },
    ]) {
      await expect(completeRun(deps, workerB, lease.runId, { ...body, ...outcome })).rejects.toBeInstanceOf(
        NotFoundError,
      );
    }
    expect(runOf(deps, a)).toEqual(before);
    expect(deps.queue.deleted).toEqual([]);
    // Its own worker still completes it.
    await expect(
      completeRun(deps, workerA, lease.runId, { ...body, result: "succeeded" }),
    ).resolves.toMatchObject({ status: "succeeded" });
  });
});

describe("the lease response's byte budget", () => {
  const big = "x".repeat(250 * 1024);

  it("leases only the runs whose payloads fit Lambda's response; the rest go back untouched, fences not raised", async () => {
    const deps = memoryDeps(NOW);
    const jobIds: string[] = [];
    for (let i = 0; i < 40; i++) jobIds.push(await dueRun(deps, alice, { payload: { i, big } }));
    const received = [...deps.queue.ready];
    const granted = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], max: 100 });
    expect(granted.length).toBeGreaterThan(10);
    expect(granted.length).toBeLessThan(40);
    // What the handler would answer fits Lambda's limit, as Lambda counts it.
    expect(Buffer.byteLength(JSON.stringify(json(200, granted)), "utf8")).toBeLessThanOrEqual(
      LAMBDA_RESPONSE_LIMIT_BYTES,
    );
    const leasedIds = new Set(granted.map((g) => g.jobId));
    const back = jobIds.filter((id) => !leasedIds.has(id));
    for (const id of back) expectUnleased(deps, id);
    for (const id of leasedIds) expect(runOf(deps, id)).toMatchObject({ status: "leased", fence: 1 });
    // Visible again at once, for the next request: exactly the messages of the runs not leased.
    expect([...deps.queue.released].sort()).toEqual(handlesOf(received, back).sort());
  });

  it("counts a payload as Lambda does: escaped inside the result's JSON string", () => {
    const quotes = '"'.repeat(100_000);
    expect(leaseResponseBytes(quotes)).toBeGreaterThanOrEqual(4 * 100_000);
    expect(leaseResponseBytes({ a: 1 })).toBeLessThan(2_048);
    expect(leaseResponseBytes(undefined)).toBeLessThan(2_048);
  });

  it("counts exactly what escaping the payload's JSON inside a string would give", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "grapheme" }), (value, text) => {
        for (const payload of [value, text, { text, value }]) {
          const escaped = Buffer.byteLength(JSON.stringify(JSON.stringify(payload)), "utf8");
          expect(leaseResponseBytes(payload) - leaseResponseBytes(null) + 6).toBe(escaped);
        }
      }),
      { numRuns: 500 },
    );
    // Lone surrogates and control characters, which JSON.stringify escapes itself.
    for (const payload of ["\ud800", "a\udc00b", "\u0000\u001f\n\t", '\\"', { k: "\udfff" }]) {
      const escaped = Buffer.byteLength(JSON.stringify(JSON.stringify(payload)), "utf8");
      expect(leaseResponseBytes(payload) - leaseResponseBytes(null) + 6).toBe(escaped);
    }
  });

  it("does not let escaping carry a response past the limit", async () => {
    const deps = memoryDeps(NOW);
    // 60,000 quotes: 60 KB of string, 120 KB of JSON, 240 KB once escaped in the response.
    for (let i = 0; i < 40; i++) await dueRun(deps, alice, { payload: '"'.repeat(60_000) });
    const granted = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], max: 100 });
    expect(Buffer.byteLength(JSON.stringify(json(200, granted)), "utf8")).toBeLessThanOrEqual(
      LAMBDA_RESPONSE_LIMIT_BYTES,
    );
    expect(granted.length).toBeLessThan(40);
  });
});

describe("a run due far ahead", () => {
  it("is hidden until shortly before it is due and never sets the hand-over: the request polls no longer than it asked", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, alice);
    const [message] = deps.queue.ready;
    if (!message?.message) throw new Error("no message");
    // A retry an hour away whose message is visible now (a repair's resend, or a long retry).
    deps.queue.ready[0] = { ...message, message: { ...message.message, notBefore: NOW + 3_600_000 } };
    const started = deps.clock.now();
    expect(await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], waitSeconds: 1 })).toEqual([]);
    expect(deps.clock.now() - started).toBeLessThanOrEqual(1_000);
    expect(deps.queue.receives).toBeLessThanOrEqual(2);
    expect(deps.queue.extended).toEqual([
      { receiptHandle: message.receiptHandle, seconds: 3_600 - DELIVERY_LEAD_SECONDS },
    ]);
    expectUnleased(deps, jobId);
  });

  it("is hidden for at most what SQS allows after a receive when it is due beyond 12 hours", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, alice);
    const [message] = deps.queue.ready;
    if (!message?.message) throw new Error("no message");
    deps.queue.ready[0] = { ...message, message: { ...message.message, notBefore: NOW + 20 * 3_600_000 } };
    await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], waitSeconds: 0 });
    expect(deps.queue.extended).toEqual([
      { receiptHandle: message.receiptHandle, seconds: SAFE_VISIBILITY_SECONDS },
    ]);
  });
});

describe("a long lease", () => {
  it("is bounded below SQS's 12 hours with room for the lead", () => {
    expect(MAX_LEASE_SECONDS + 6 + 1).toBeLessThan(SAFE_VISIBILITY_SECONDS);
  });

  it("at the largest allowed leaseSeconds is leased with its message hidden for the whole lease", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, alice, { leaseSeconds: MAX_LEASE_SECONDS });
    const [lease] = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"] });
    expect(lease?.leaseExpiresAt).toBe(
      new Date(NOW + MAX_LEASE_SECONDS * 1000).toISOString().replace(".000", ""),
    );
    expect(deps.queue.extended).toEqual([
      { receiptHandle: expect.any(String), seconds: MAX_LEASE_SECONDS + 1 },
    ]);
  });

  it("stored before the bound (12 h) asks SQS for no more than it allows", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, alice, { leaseSeconds: 60 });
    const job = deps.jobs.jobs.get(jobId);
    if (!job) throw new Error("no job");
    deps.jobs.jobs.set(jobId, { ...job, leaseSeconds: 43_200 });
    const [lease] = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"] });
    expect(lease).toBeDefined();
    expect(deps.queue.extended[0]?.seconds).toBe(SAFE_VISIBILITY_SECONDS);
  });

  it("whose visibility change fails still leases, and the other runs of the request too", async () => {
    const deps = memoryDeps(NOW);
    const long = await dueRun(deps, alice, { leaseSeconds: 3_600 });
    const short = await dueRun(deps, alice);
    const longMessage = deps.queue.ready.find((r) => r.message?.jobId === long);
    deps.queue.failExtends.add(longMessage?.receiptHandle ?? "");
    const granted = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], max: 10 });
    expect(granted.map((g) => g.jobId).sort()).toEqual([long, short].sort());
    expect(deps.warnings).toEqual(["could not extend the run's message to its lease"]);
  });
});

describe("the time one lease request takes", () => {
  it("never waits for a run's due instant: a run arriving at the end of a long poll is handed over at once", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await dueRun(deps, alice);
    const [message] = deps.queue.ready.splice(0);
    const inFlight = message?.message;
    if (!message || !inFlight) throw new Error("no message");
    deps.queue.receive = async () => {
      // The long poll waits 19.5 s; then a run shows up that is due 5 s later.
      deps.clock.advance(19_500);
      return [{ ...message, message: { ...inFlight, notBefore: deps.clock.now() + 5_000 } }];
    };
    const started = deps.clock.now();
    const [granted] = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], waitSeconds: 20 });
    expect(deps.clock.now() - started).toBe(19_500);
    expect(granted).toMatchObject({ jobId, startAt: new Date(NOW + 24_500).toISOString() });
    expect(runOf(deps, jobId)).toMatchObject({ status: "leased", fence: 1, startedAt: NOW + 24_500 });
  });

  it("asks for no poll that would run past its budget", async () => {
    const deps = memoryDeps(NOW);
    await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], waitSeconds: 20 });
    expect(Math.max(...deps.queue.waits)).toBeLessThanOrEqual(20);
    expect(deps.clock.now() - NOW).toBeLessThanOrEqual(22_000);
  });
});

describe("a lease write that throws", () => {
  it("is that run's alone: the batch's other runs are handed over; only a batch that all failed fails", async () => {
    const deps = memoryDeps(NOW);
    const first = await dueRun(deps, alice);
    const second = await dueRun(deps, alice);
    const [firstHandle] = handlesOf(deps.queue.ready, [first]);
    const leaseRun = deps.runs.leaseRun.bind(deps.runs);
    deps.runs.leaseRun = async (jobId, scheduledFor, grant) => {
      if (jobId === first) throw new Error("ProvisionedThroughputExceededException");
      return leaseRun(jobId, scheduledFor, grant);
    };
    const granted = await leaseRuns(deps, workerA, { workerId: "w", types: ["x"], max: 10 });
    expect(granted.map((lease) => lease.jobId)).toEqual([second]);
    // Its write failed: no item, its message neither deleted nor given back (it comes back
    // when its visibility ends), the run still the pending one its message carries.
    expectUnleased(deps, first);
    expect(deps.queue.deleted).not.toContain(firstHandle);
    expect(deps.queue.released).not.toContain(firstHandle);
    expect(deps.warnings).toContain("could not lease a run; its message comes back");

    const alone = memoryDeps(NOW);
    const only = await dueRun(alone, alice);
    alone.runs.leaseRun = async () => {
      throw new Error("ProvisionedThroughputExceededException");
    };
    await expect(leaseRuns(alone, workerA, { workerId: "w", types: ["x"], max: 10 })).rejects.toThrow(
      "ProvisionedThroughputExceededException",
    );
    expectUnleased(alone, only);
    expect(alone.queue.deleted).toEqual([]);
  });
});
