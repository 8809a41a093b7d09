import { describe, expect, it } from "vitest";
import { madeRunMessageOf } from "../../lambdas/core/delivery";
import { seededRun } from "../../lambdas/core/lifecycle/creation";
import { runBefore, transition } from "../../lambdas/core/lifecycle/transition";
import { type RunSeed, RunStatus } from "../../lambdas/core/run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { memoryDeps } from "../support/memory-ports";

/** Which events a seed stands in for a run not written (decision 0051), and which not. */
const T = Date.UTC(2026, 11, 2, 9, 0, 0);
const seed: RunSeed = {
  runId: "r_1",
  jobId: "j_1",
  tenant: "t",
  type: "x",
  scheduledFor: T,
  final: false,
  createdAt: T - 60_000,
};
const grant = { workerId: "w", startsAt: T, leaseExpiresAt: T + 30_000, receiptHandle: "rh", now: T };

describe("a seed in the lifecycle", () => {
  it("stands for the pending run only in a lease, an abandon or a miss; a stored run wins", () => {
    expect(runBefore(undefined, { kind: "lease", grant: { ...grant, seed } })).toEqual(seededRun(seed));
    expect(
      runBefore(undefined, { kind: "abandon", status: "cancelled", reason: "x", now: T, final: false, seed }),
    ).toEqual(seededRun(seed));
    expect(runBefore(undefined, { kind: "miss", reason: "x", now: T, final: false, seed })).toEqual(
      seededRun(seed),
    );
    expect(runBefore(undefined, { kind: "lease", grant })).toBeUndefined();
    expect(runBefore(undefined, { kind: "heartbeat", fence: 0, leaseExpiresAt: T, now: T })).toBeUndefined();
    const stored = { ...seededRun(seed), status: RunStatus.Succeeded };
    expect(runBefore(stored, { kind: "lease", grant: { ...grant, seed } })).toBe(stored);
    expect(transition(undefined, { kind: "lease", grant: { ...grant, seed } })).toMatchObject({
      status: RunStatus.Leased,
      fence: 1,
      attempt: 1,
    });
  });

  it("a copy whose seed says `final` of a run written not final is ended by the run's own", async () => {
    const deps = memoryDeps(T - 60_000);
    const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
    const { jobId } = await createJob(deps, alice, { type: "x", runAt: new Date(T).toISOString() });
    const [sent] = deps.queue.sent.splice(0);
    if (!sent) throw new Error("no message");
    // Written before, not final (as an overlap claim would write it), then its job cancelled.
    const own = seededRun({ ...seed, jobId, tenant: "t-a", runId: sent.message.runId, final: false });
    await deps.runs.createRun(own);
    await controlJob(deps, alice, jobId, "cancel");
    deps.clock.set(T);
    const copy = madeRunMessageOf({ ...own, final: true });
    deps.queue.ready.push({ message: copy, receiptHandle: "copy" });
    const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10, waitSeconds: 0 })).toEqual(
      [],
    );
    expect(await deps.runs.getRun(jobId, T)).toMatchObject({ status: RunStatus.Cancelled, final: false });
    expect(deps.queue.deleted).toContain("copy");
  });

  it("refuses each guarded event on a run in the wrong state, written or seeded", () => {
    const pending = seededRun(seed);
    const leased = { ...pending, status: RunStatus.Leased, attempt: 1, fence: 1, leaseExpiresAt: T };
    const retrying = { ...pending, attempt: 1 };
    const finished = { ...pending, status: RunStatus.Succeeded, finishedAt: T, checkAt: T, final: true };
    const refused = [
      transition(leased, { kind: "lose", reason: "x", now: T, final: true }),
      transition(leased, { kind: "lose", reason: "x", now: T - 1, final: false }),
      transition(retrying, { kind: "drop-retry", reason: "x", now: T, final: true }),
      transition(pending, { kind: "drop-retry", reason: "x", now: T, final: false }),
      transition(pending, { kind: "settle" }),
      transition({ ...finished, checkAt: undefined }, { kind: "settle" }),
      transition(finished, { kind: "track", checkAt: T }),
      transition({ ...finished, checkAt: undefined, final: false }, { kind: "track", checkAt: T }),
      transition(finished, { kind: "recheck", expectedCheckAt: T + 1, checkAt: T + 2 }),
      transition(pending, { kind: "miss", reason: "x", now: T, final: true }),
      transition({ ...pending, origin: "manual" }, { kind: "miss", reason: "x", now: T, final: false }),
    ];
    expect(refused).toEqual(refused.map(() => undefined));
    expect(transition(leased, { kind: "lose", reason: "x", now: T, final: false })?.status).toBe(
      RunStatus.Lost,
    );
    expect(transition(retrying, { kind: "drop-retry", reason: "x", now: T, final: false })?.status).toBe(
      RunStatus.DeadLettered,
    );
    expect(transition(finished, { kind: "settle" })?.checkAt).toBeUndefined();
    expect(transition(finished, { kind: "recheck", expectedCheckAt: T, checkAt: T + 2 })?.checkAt).toBe(
      T + 2,
    );
    expect(transition({ ...finished, checkAt: undefined }, { kind: "track", checkAt: T + 3 })?.checkAt).toBe(
      T + 3,
    );
  });
});
