import { describe, expect, it } from "vitest";
import { NotFoundError, StaleFenceError, ValidationError } from "../../lambdas/core/errors";
import { completeRuns } from "../../lambdas/core/use-cases/complete-runs";
import { heartbeatRuns } from "../../lambdas/core/use-cases/heartbeat-run";
import { type Lease, leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { dueRun, type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * Issue 14: completions and heartbeats of many runs in one call, each item with its own
 * outcome under the one-run rules, the messages deleted and extended in batched calls.
 */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "tenant-a", principal: "arn:aws:iam::1:role/alice" };
const bob = { tenant: "tenant-b", principal: "arn:aws:iam::1:role/bob" };
const workerA = { principal: "arn:aws:iam::1:role/worker-a", tenants: ["tenant-a"] };

async function leased(deps: MemoryDeps, count: number, caller = alice): Promise<Lease[]> {
  for (let i = 0; i < count; i++) await dueRun(deps, {}, caller);
  return leaseRuns(
    deps,
    { principal: "p", tenants: [caller.tenant] },
    { workerId: "w", types: ["x"], max: 100 },
  );
}

describe("completeRuns", () => {
  it("records every item, deletes the messages in one batched call, and answers in order", async () => {
    const deps = memoryDeps(NOW);
    const leases = await leased(deps, 3);
    const outcomes = await completeRuns(deps, workerA, {
      completions: leases.map((l, i) => ({
        runId: l.runId,
        fence: l.fence,
        result: i === 2 ? "failed" : "succeeded",
        ...(i === 2 ? { retryable: false, error: "bad" } : {}),
      })),
    });
    expect(outcomes.map((o) => (o.ok ? o.value.status : "error"))).toEqual([
      "succeeded",
      "succeeded",
      "dead-lettered",
    ]);
    expect(outcomes.map((o) => o.runId)).toEqual(leases.map((l) => l.runId));
    expect(deps.queue.deleteBatches).toBe(1);
    expect(deps.queue.deleted).toHaveLength(3);
    expect([...deps.runs.runs.values()].map((r) => r.status).sort()).toEqual([
      "dead-lettered",
      "succeeded",
      "succeeded",
    ]);
  });

  it("gives each bad item its own error and still records the good ones", async () => {
    const deps = memoryDeps(NOW);
    const [good, stale] = await leased(deps, 2);
    const [others] = await leased(deps, 1, bob);
    if (!good || !stale || !others) throw new Error("no leases");
    const outcomes = await completeRuns(deps, workerA, {
      completions: [
        { runId: good.runId, fence: good.fence, result: "succeeded" },
        { runId: stale.runId, fence: stale.fence + 1, result: "succeeded" },
        { runId: others.runId, fence: others.fence, result: "succeeded" },
        { runId: good.runId, fence: good.fence, result: "maybe" },
        { fence: 1, result: "succeeded" },
      ],
    });
    const errorOf = (i: number) => {
      const outcome = outcomes[i];
      return outcome && !outcome.ok ? outcome.error : undefined;
    };
    expect(outcomes[0]).toMatchObject({ ok: true, value: { status: "succeeded" } });
    expect(errorOf(1)).toBeInstanceOf(StaleFenceError);
    expect(errorOf(2)).toBeInstanceOf(NotFoundError); // another tenant's run: as if absent
    expect(errorOf(3)).toMatchObject({ field: "result" });
    expect(errorOf(3)).toBeInstanceOf(ValidationError);
    expect(errorOf(4)).toMatchObject({ field: "runId" });
    expect(outcomes[4]?.runId).toBe("#4");
    // Nothing written for the refused ones.
    expect([...deps.runs.runs.values()].find((r) => r.runId === stale.runId)?.status).toBe("leased");
    expect([...deps.runs.runs.values()].find((r) => r.runId === others.runId)?.status).toBe("leased");
  });

  it("answers a repeated batch as the first time, writing nothing new", async () => {
    const deps = memoryDeps(NOW);
    const leases = await leased(deps, 2);
    const body = {
      completions: leases.map((l) => ({ runId: l.runId, fence: l.fence, result: "succeeded" })),
    };
    const first = await completeRuns(deps, workerA, body);
    const again = await completeRuns(deps, workerA, body);
    expect(again).toEqual(first);
    expect(deps.queue.deleted).toHaveLength(2);
  });

  it("refuses a malformed envelope as a whole: no items, too many, not a list", async () => {
    const deps = memoryDeps(NOW);
    for (const body of [
      {},
      { completions: [] },
      { completions: "x" },
      { completions: Array(101).fill({}) },
    ]) {
      await expect(completeRuns(deps, workerA, body)).rejects.toMatchObject({ field: "completions" });
    }
  });
});

describe("heartbeatRuns", () => {
  it("extends every live lease, reads the jobs in one call and hides the messages in one batched call", async () => {
    const deps = memoryDeps(NOW);
    const leases = await leased(deps, 3);
    deps.clock.advance(10_000);
    const hidesBefore = deps.queue.hides;
    const outcomes = await heartbeatRuns(deps, workerA, {
      heartbeats: leases.map((l) => ({ runId: l.runId, fence: l.fence })),
    });
    const leaseEnd = new Date(NOW + 10_000 + deps.settings.leaseSeconds * 1000)
      .toISOString()
      .replace(".000", "");
    expect(outcomes.map((o) => (o.ok ? o.value.leaseExpiresAt : "error"))).toEqual([
      leaseEnd,
      leaseEnd,
      leaseEnd,
    ]);
    expect(deps.queue.hides - hidesBefore).toBe(1);
    for (const run of deps.runs.runs.values()) {
      expect(run.leaseExpiresAt).toBe(NOW + 10_000 + deps.settings.leaseSeconds * 1000);
    }
  });

  it("answers a stale fence with 409's error and another tenant's run as absent, item by item", async () => {
    const deps = memoryDeps(NOW);
    const [live] = await leased(deps, 1);
    const [others] = await leased(deps, 1, bob);
    if (!live || !others) throw new Error("no leases");
    const outcomes = await heartbeatRuns(deps, workerA, {
      heartbeats: [
        { runId: live.runId, fence: live.fence + 5 },
        { runId: others.runId, fence: others.fence },
        { runId: live.runId, fence: live.fence },
        { runId: "r_nope", fence: 1 },
      ],
    });
    expect(outcomes.map((o) => (o.ok ? "ok" : o.error.constructor.name))).toEqual([
      "StaleFenceError",
      "NotFoundError",
      "ok",
      "NotFoundError",
    ]);
  });
});
