import { beforeAll, describe, expect, it } from "vitest";
import { runIdOf } from "../../lambdas/core/ids";
import type { Job } from "../../lambdas/core/job";
import { aheadKeyOf, bucketOf, dueKeyOf, groupOf, repairKeyOf, shardOf } from "../../lambdas/core/keys";
import { newRun, scheduledRun, seededRun } from "../../lambdas/core/lifecycle/creation";
import type { JobStore, LeaseGrant, RunStore } from "../../lambdas/core/ports";
import { type Run, type RunSeed, RunStatus } from "../../lambdas/core/run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { oneOffJob } from "../support/jobs";
import { MemoryJobStore, MemoryRunStore, memoryDeps } from "../support/memory-ports";
import { createTestStack } from "../support/stack";

/**
 * The store conformance suite (issue 16): one set of scenarios, every conditional transition
 * of a run and a job, run against the in-memory stores the core's unit tests use and the
 * DynamoDB stores on dynalite. A rule the fake drifts from (as its lease rule once ignored a
 * pending run's scheduled instant) fails here, on the fake's side.
 */
const T = Date.UTC(2026, 10, 2, 9, 0, 0);
const GRACE = 30_000;
const LEASE = 30_000;
const HOUR_MS = 3_600_000;

interface Stores {
  readonly runs: RunStore;
  readonly jobs: JobStore;
}

const kinds: Array<[string, () => Promise<Stores>]> = [
  ["in memory", async () => ({ runs: new MemoryRunStore(), jobs: new MemoryJobStore() })],
  [
    "on DynamoDB (dynalite)",
    async () => {
      const stack = await createTestStack("conformance");
      return { runs: stack.deps.runs, jobs: stack.deps.jobs };
    },
  ],
];

let sequence = 0;
/** A pending run of a fresh job, due `dueIn` after T, created in the store. */
async function pendingRun(
  stores: Stores,
  options: { dueIn?: number; final?: boolean; tenant?: string; origin?: "manual" | "backfill" } = {},
) {
  sequence += 1;
  const job = {
    jobId: `j_conform${String(sequence).padStart(11, "0")}`,
    tenant: options.tenant ?? "t1",
    type: "x",
  };
  const made = newRun(job, T + (options.dueIn ?? 0), T, GRACE, options.final ?? false);
  const run = options.origin ? { ...made, origin: options.origin } : made;
  expect(await stores.runs.createRun(run)).toBe("created");
  return run;
}

const grant = (startsAt: number, worker = "w1"): LeaseGrant => ({
  workerId: worker,
  startsAt,
  leaseExpiresAt: startsAt + LEASE,
  receiptHandle: `rh-${worker}-${startsAt}`,
  now: startsAt,
});

const lease = (stores: Stores, run: Run, startsAt: number, worker?: string) =>
  stores.runs.leaseRun(run.jobId, run.scheduledFor, grant(startsAt, worker));

const succeed = (
  stores: Stores,
  run: Run,
  fence: number,
  options: { final?: boolean; tenants?: string[] } = {},
) =>
  stores.runs.finishRun(
    run.jobId,
    run.scheduledFor,
    fence,
    { status: RunStatus.Succeeded, error: undefined, now: T + 1_000, final: options.final ?? run.final },
    options.tenants,
  );

const stored = (stores: Stores, run: Pick<Run, "jobId" | "scheduledFor">) =>
  stores.runs.getRun(run.jobId, run.scheduledFor);

/** The seed of a run made but not written, of a fresh job (decision 0051): nothing is stored. */
function seed(scheduledFor: number, final: boolean): RunSeed {
  sequence += 1;
  const jobId = `j_seeded${String(sequence).padStart(12, "0")}`;
  return {
    runId: runIdOf(jobId, scheduledFor),
    jobId,
    tenant: "t1",
    type: "x",
    scheduledFor,
    final,
    createdAt: T - 60_000,
  };
}

const seededLease = (stores: Stores, made: RunSeed, startsAt: number, worker?: string) =>
  stores.runs.leaseRun(made.jobId, made.scheduledFor, { ...grant(startsAt, worker), seed: made });

describe.each(kinds)("the run store %s", (_name, make) => {
  let stores: Stores;
  beforeAll(async () => {
    stores = await make();
  });

  it("creates a run once: a second create of the same job and instant is `exists`", async () => {
    const run = await pendingRun(stores);
    expect(await stores.runs.createRun(run)).toBe("exists");
    expect(await stored(stores, run)).toMatchObject({ status: "pending", attempt: 0, fence: 0 });
  });

  it("leases a pending run from its scheduled instant, not before; raises fence and attempt", async () => {
    const run = await pendingRun(stores, { dueIn: 10_000 });
    expect(await lease(stores, run, T + 9_999)).toBeUndefined();
    const leased = await lease(stores, run, T + 10_000);
    expect(leased).toMatchObject({
      status: "leased",
      fence: 1,
      attempt: 1,
      leaseExpiresAt: T + 10_000 + LEASE,
    });
    expect(await stored(stores, run)).toMatchObject({ status: "leased", fence: 1, startedAt: T + 10_000 });
  });

  it("never leases a held run; a lapsed lease is taken over with a higher fence", async () => {
    const run = await pendingRun(stores);
    await lease(stores, run, T);
    expect(await lease(stores, run, T + LEASE - 1, "w2")).toBeUndefined();
    const again = await lease(stores, run, T + LEASE, "w2");
    expect(again).toMatchObject({ fence: 2, attempt: 2, workerId: "w2" });
  });

  it("answers a lease repeated by the receive that holds it (a lost answer's retry) with the run unchanged", async () => {
    const run = await pendingRun(stores);
    const first = await lease(stores, run, T);
    expect(first).toMatchObject({ status: "leased", fence: 1, attempt: 1 });
    // The SDK's retry of a lease carried out with its answer lost: the same grant, refused as
    // a write (the run is held), answered with the lease it holds.
    expect(await lease(stores, run, T)).toEqual(first);
    expect(await stored(stores, run)).toEqual(first);
    // Another receive of the same run (a duplicate message) is refused, as before.
    const other = { ...grant(T), receiptHandle: "rh-another-receive" };
    expect(await stores.runs.leaseRun(run.jobId, run.scheduledFor, other)).toBeUndefined();
    // Once the run is no longer held by it, the receipt answers nothing.
    await succeed(stores, run, 1);
    expect(await lease(stores, run, T)).toBeUndefined();
  });

  it("answers a retry or a give-back repeated after its answer was lost as applied, and no one else's", async () => {
    const retried = await pendingRun(stores);
    await lease(stores, retried, T);
    const plan = { error: "boom", retryAt: T + 20_000, checkAt: T + 50_000, now: T + 1_000 };
    expect(await stores.runs.retryRun(retried.jobId, retried.scheduledFor, 1, plan)).toEqual({
      receiptHandle: `rh-w1-${T}`,
    });
    const afterRetry = await stored(stores, retried);
    // The same request again: applied, with no handle (its first write took it), nothing changed.
    expect(await stores.runs.retryRun(retried.jobId, retried.scheduledFor, 1, plan)).toEqual({
      receiptHandle: undefined,
    });
    expect(await stored(stores, retried)).toEqual(afterRetry);
    // Another plan, or another fence, is not its repeat.
    const later = { ...plan, retryAt: T + 21_000 };
    expect(await stores.runs.retryRun(retried.jobId, retried.scheduledFor, 1, later)).toBeUndefined();
    expect(await stores.runs.retryRun(retried.jobId, retried.scheduledFor, 0, plan)).toBeUndefined();

    const givenBack = await pendingRun(stores);
    await lease(stores, givenBack, T);
    const returned = await stores.runs.returnLease(givenBack.jobId, givenBack.scheduledFor, 1, T + 1_000);
    expect(returned).toMatchObject({ status: "pending", attempt: 0, fence: 1 });
    expect(await stores.runs.returnLease(givenBack.jobId, givenBack.scheduledFor, 1, T + 1_000)).toEqual(
      returned,
    );
    // Leased again since (a higher fence): the old holder's give-back is refused.
    await lease(stores, givenBack, T + 2_000, "w2");
    expect(
      await stores.runs.returnLease(givenBack.jobId, givenBack.scheduledFor, 1, T + 3_000),
    ).toBeUndefined();
  });

  it("extends a live lease held with its fence, and nothing else", async () => {
    const run = await pendingRun(stores);
    await lease(stores, run, T);
    const { heartbeatRun } = stores.runs;
    const beat = heartbeatRun.bind(stores.runs);
    expect(await beat(run.jobId, run.scheduledFor, 1, T + 50_000, T + 10_000)).toEqual({
      receiptHandle: `rh-w1-${T}`,
    });
    expect((await stored(stores, run))?.leaseExpiresAt).toBe(T + 50_000);
    expect(await beat(run.jobId, run.scheduledFor, 2, T + 60_000, T + 10_000)).toBeUndefined(); // stale
    expect(await beat(run.jobId, run.scheduledFor, 1, T + 90_000, T + 50_000)).toBeUndefined(); // lapsed
    expect((await stored(stores, run))?.leaseExpiresAt).toBe(T + 50_000);
  });

  it("gives back a lease only with its fence: pending again, its attempt taken back, its fence kept", async () => {
    const run = await pendingRun(stores);
    await lease(stores, run, T);
    expect(await stores.runs.returnLease(run.jobId, run.scheduledFor, 2, T + 1_000)).toBeUndefined(); // stale
    const returned = await stores.runs.returnLease(run.jobId, run.scheduledFor, 1, T + 1_000);
    expect(returned).toMatchObject({ status: "pending", attempt: 0, fence: 1, leaseExpiresAt: undefined });
    // (Its repeat answers the same run, as after a lost answer; see the test above.)
    // Leasable again at once, under at-most-once too (never leased for a delivery).
    const again = await stores.runs.leaseRun(run.jobId, run.scheduledFor, {
      ...grant(T + 1_000, "w2"),
      firstOnly: true,
    });
    expect(again).toMatchObject({ status: "leased", attempt: 1, fence: 2, workerId: "w2" });
  });

  it("records an outcome only with the holding fence, the run's tenant and its `final`; once", async () => {
    const run = await pendingRun(stores, { tenant: "t1" });
    await lease(stores, run, T);
    expect(await succeed(stores, run, 0)).toBeUndefined();
    expect(await succeed(stores, run, 1, { tenants: ["t2"] })).toBeUndefined();
    expect(await succeed(stores, run, 1, { final: true })).toBeUndefined();
    expect(await succeed(stores, run, 1, { tenants: ["t1"] })).toEqual({
      receiptHandle: `rh-w1-${T}`,
      final: false,
      tracked: false,
    });
    expect(await stored(stores, run)).toMatchObject({ status: "succeeded", finishedAt: T + 1_000 });
    // The same write again (its answer lost): answered as recorded, with no handle; another
    // completion (a later one) is refused. Neither changes anything.
    expect(await succeed(stores, run, 1)).toEqual({ receiptHandle: undefined, final: false, tracked: false });
    expect(await succeed(stores, run, 1, { tenants: ["t2"] })).toBeUndefined(); // never another tenant's
    const later = { status: RunStatus.Succeeded, error: undefined, now: T + 2_000, final: false };
    expect(await stores.runs.finishRun(run.jobId, run.scheduledFor, 1, later)).toBeUndefined();
    expect(await stored(stores, run)).toMatchObject({ status: "succeeded", finishedAt: T + 1_000 });
    expect(await lease(stores, run, T + 100_000)).toBeUndefined(); // finished: never leased again
  });

  it("puts a failed attempt back for a retry, leased again from its retry time with a higher fence", async () => {
    const run = await pendingRun(stores);
    await lease(stores, run, T);
    const plan = { error: "boom", retryAt: T + 20_000, checkAt: T + 50_000, now: T + 1_000 };
    expect(await stores.runs.retryRun(run.jobId, run.scheduledFor, 0, plan)).toBeUndefined(); // stale
    expect(await stores.runs.retryRun(run.jobId, run.scheduledFor, 1, plan)).toEqual({
      receiptHandle: `rh-w1-${T}`,
    });
    expect(await stored(stores, run)).toMatchObject({
      status: "pending",
      retryAt: T + 20_000,
      error: "boom",
    });
    expect(await lease(stores, run, T + 19_999)).toBeUndefined();
    expect(await lease(stores, run, T + 20_000)).toMatchObject({ fence: 2, attempt: 2 });
  });

  it("dead-letters, lists the dead letter to its tenant only, and replays it once", async () => {
    const run = await pendingRun(stores, { tenant: "dl-tenant" });
    const before = await stores.runs.countDeadLetters();
    await lease(stores, run, T);
    const outcome = { status: RunStatus.DeadLettered, error: "gave up", now: T + 2_000, final: false };
    expect(await stores.runs.finishRun(run.jobId, run.scheduledFor, 1, outcome)).toBeDefined();
    expect((await stores.runs.listDeadLetters("dl-tenant", 10)).items.map((r) => r.runId)).toEqual([
      run.runId,
    ]);
    expect((await stores.runs.listDeadLetters("someone-else", 10)).items).toEqual([]);
    expect(await stores.runs.countDeadLetters()).toBe(before + 1);

    const replay = { by: "ops", now: T + 3_000, checkAt: T + 33_000 };
    const replayed = await stores.runs.replayRun(run.jobId, run.scheduledFor, replay);
    expect(replayed).toMatchObject({ status: "pending", attempt: 0, replays: 1, replayedBy: "ops" });
    expect(await stores.runs.replayRun(run.jobId, run.scheduledFor, replay)).toBeUndefined();
    expect(await stores.runs.countDeadLetters()).toBe(before);
    expect(await lease(stores, run, T + 3_000)).toMatchObject({ fence: 2, attempt: 1 });
  });

  it("replays only a dead-lettered run (or, asked so, a missed one)", async () => {
    const run = await pendingRun(stores);
    const replay = { by: "ops", now: T + 3_000, checkAt: T + 33_000 };
    expect(await stores.runs.replayRun(run.jobId, run.scheduledFor, replay)).toBeUndefined();
    await stores.runs.missRun(run.jobId, run.scheduledFor, { reason: "paused", now: T, final: false });
    expect(await stores.runs.replayRun(run.jobId, run.scheduledFor, replay, "missed")).toMatchObject({
      status: "pending",
      replays: 1,
    });
  });

  it("ends a run unrun (cancel, pause) while it has not started or its lease lapsed, never while held", async () => {
    const future = await pendingRun(stores, { dueIn: 3_600_000 });
    await stores.runs.abandonRun(future.jobId, future.scheduledFor, "cancelled", "job cancelled", T);
    expect(await stored(stores, future)).toMatchObject({ status: "cancelled", error: "job cancelled" });

    const held = await pendingRun(stores);
    await lease(stores, held, T);
    await stores.runs.abandonRun(held.jobId, held.scheduledFor, "missed", "paused", T + LEASE - 1);
    expect(await stored(stores, held)).toMatchObject({ status: "leased" });
    await stores.runs.abandonRun(held.jobId, held.scheduledFor, "missed", "paused", T + LEASE);
    expect(await stored(stores, held)).toMatchObject({ status: "missed", error: "paused" });
  });

  it("records a missed firing only for a run that never started, with the `final` it has", async () => {
    const run = await pendingRun(stores);
    const miss = { reason: "too late", now: T + 5_000, final: false };
    expect(await stores.runs.missRun(run.jobId, run.scheduledFor, { ...miss, final: true })).toBeUndefined();
    expect(await stores.runs.missRun(run.jobId, run.scheduledFor, miss)).toMatchObject({ status: "missed" });

    const started = await pendingRun(stores);
    await lease(stores, started, T);
    expect(await stores.runs.missRun(started.jobId, started.scheduledFor, miss)).toBeUndefined();

    // A run asked for by hand (trigger, backfill) runs however late it is.
    for (const origin of ["manual", "backfill"] as const) {
      const manual = await pendingRun(stores, { origin });
      expect(await stores.runs.missRun(manual.jobId, manual.scheduledFor, miss)).toBeUndefined();
      expect(await stored(stores, manual)).toMatchObject({ status: "pending", origin });
    }
  });

  it("writes a run made but not written at its first lease, from its seed, as a written run's lease would leave it (decision 0051)", async () => {
    const written = await pendingRun(stores, { dueIn: 5_000, final: true });
    const made = seed(T + 5_000, true);
    expect(await stored(stores, made)).toBeUndefined();
    // Not before its scheduled instant, as a written pending run.
    expect(await seededLease(stores, made, T + 4_999)).toBeUndefined();
    expect(await stored(stores, made)).toBeUndefined();
    const fromSeed = await seededLease(stores, made, T + 5_000);
    const fromItem = await lease(stores, written, T + 5_000);
    const same = ({ runId: _r, jobId: _j, createdAt: _c, checkAt: _k, ...rest }: Run) => rest;
    expect(fromSeed && same(fromSeed)).toEqual(fromItem && { ...same(fromItem) });
    expect(await stored(stores, made)).toMatchObject({
      runId: made.runId,
      jobId: made.jobId,
      createdAt: made.createdAt,
      status: "leased",
      fence: 1,
      attempt: 1,
      final: true,
    });
    // Written now: a second copy of its message finds it held, then finished.
    expect(await seededLease(stores, made, T + 6_000, "w2")).toBeUndefined();
    expect(await succeed(stores, seededRun(made), 1, { final: true })).toBeDefined();
    expect(await seededLease(stores, made, T + 100_000, "w2")).toBeUndefined();
    expect(await stored(stores, made)).toMatchObject({ status: "succeeded", fence: 1 });
  });

  it("at most once, a run made but not written is leased once", async () => {
    const made = seed(T, false);
    const first = { ...grant(T), firstOnly: true, seed: made };
    expect(await stores.runs.leaseRun(made.jobId, made.scheduledFor, first)).toMatchObject({ attempt: 1 });
    const again = { ...grant(T + LEASE, "w2"), firstOnly: true, seed: made };
    expect(await stores.runs.leaseRun(made.jobId, made.scheduledFor, again)).toBeUndefined();
  });

  it("marks a run its job's last when a copy of its message says so: at its lease, or on its own (decision 0046's addendum)", async () => {
    // Written not last by one schedule's copy (its first write: no `final` on the item), its
    // lease lapsed, then leased by the other's copy that marks it last.
    const made = seed(T, false);
    expect(await seededLease(stores, made, T)).toMatchObject({ final: false });
    const marking = await seededLease(stores, { ...made, final: true }, T + LEASE, "w2");
    expect(marking).toMatchObject({ final: true, attempt: 2, workerId: "w2" });
    // A copy not marked last leaves a last run last.
    expect(await seededLease(stores, made, T + 2 * LEASE, "w3")).toMatchObject({ final: true, attempt: 3 });
    // Not written: the lease writes it last from a seed that says so.
    expect(await seededLease(stores, seed(T, true), T)).toMatchObject({ final: true, attempt: 1 });
    // On its own: a written run not last (finished or not), once; never a cancelled one or one not written.
    const other = seed(T, false);
    expect(await stores.runs.abandonRun(other.jobId, T, "missed", "paused", T, false, other)).toBeDefined();
    expect(await stores.runs.markLastRun(other.jobId, other.scheduledFor)).toMatchObject({
      final: true,
      status: RunStatus.Missed,
    });
    expect(await stores.runs.markLastRun(other.jobId, other.scheduledFor)).toBeUndefined();
    expect((await stores.runs.getRun(other.jobId, other.scheduledFor))?.final).toBe(true);
    const cancelled = seed(T, false);
    expect(await stores.runs.createRun(seededRun(cancelled))).toBe("created");
    await stores.runs.abandonRun(cancelled.jobId, T, "cancelled", "why", T, false);
    expect(await stores.runs.markLastRun(cancelled.jobId, T)).toBeUndefined();
    expect((await stores.runs.getRun(cancelled.jobId, T))?.final).toBe(false);
    expect(await stores.runs.markLastRun(seed(T, false).jobId, T)).toBeUndefined();
  });

  it("ends a run made but not written unstarted (cancelled, skipped, missed) by writing it, with the `final` it has", async () => {
    const cancelled = seed(T + 60_000, false);
    const { jobId, scheduledFor } = cancelled;
    expect(
      await stores.runs.abandonRun(jobId, scheduledFor, "cancelled", "gone", T, true, cancelled),
    ).toBeUndefined();
    expect(await stored(stores, cancelled)).toBeUndefined();
    expect(
      await stores.runs.abandonRun(jobId, scheduledFor, "cancelled", "gone", T, false, cancelled),
    ).toMatchObject({
      status: "cancelled",
      error: "gone",
      attempt: 0,
      fence: 0,
      finishedAt: T,
      checkAt: undefined,
    });
    expect(await seededLease(stores, cancelled, T + 60_000)).toBeUndefined();

    const late = seed(T, true);
    const miss = { reason: "too late", now: T + 5_000, final: true, seed: late };
    expect(
      await stores.runs.missRun(late.jobId, late.scheduledFor, { ...miss, final: false }),
    ).toBeUndefined();
    expect(await stores.runs.missRun(late.jobId, late.scheduledFor, miss)).toMatchObject({
      status: "missed",
      final: true,
      attempt: 0,
    });
    expect(await stores.runs.missRun(late.jobId, late.scheduledFor, miss)).toBeUndefined(); // once

    // A seed never stands for a run that is written: a leased one is not ended by it.
    const leased = seed(T, false);
    await seededLease(stores, leased, T);
    const ended = await stores.runs.abandonRun(
      leased.jobId,
      leased.scheduledFor,
      "skipped",
      "x",
      T + 1,
      false,
      leased,
    );
    expect(ended).toBeUndefined();
    expect(await stored(stores, leased)).toMatchObject({ status: "leased" });
  });

  it("at most once: leases only a run never leased, and records a lapsed lease lost (a last one stays a repair candidate)", async () => {
    const run = await pendingRun(stores);
    expect(
      await stores.runs.leaseRun(run.jobId, run.scheduledFor, { ...grant(T), firstOnly: true }),
    ).toMatchObject({
      attempt: 1,
    });
    const loss = { reason: "lapsed", now: T + LEASE - 1, final: false };
    expect(await stores.runs.loseRun(run.jobId, run.scheduledFor, loss)).toBeUndefined(); // still held
    const later = T + LEASE;
    expect(
      await stores.runs.leaseRun(run.jobId, run.scheduledFor, { ...grant(later), firstOnly: true }),
    ).toBeUndefined();
    expect(
      await stores.runs.loseRun(run.jobId, run.scheduledFor, { ...loss, now: later, final: true }),
    ).toBeUndefined();
    expect(await stores.runs.loseRun(run.jobId, run.scheduledFor, { ...loss, now: later })).toMatchObject({
      status: "lost",
      error: "lapsed",
      finishedAt: later,
    });
    expect(await stores.runs.leaseRun(run.jobId, run.scheduledFor, grant(later + 1))).toBeUndefined();

    const last = await pendingRun(stores, { final: true });
    await lease(stores, last, T);
    await stores.runs.loseRun(last.jobId, last.scheduledFor, { ...loss, now: later, final: true });
    const candidates = await stores.runs.queryRepairCandidates(repairKeyOf(last.jobId), T + 3_600_000, 100);
    expect(candidates.items.map((c) => c.runId)).toContain(last.runId);
  });

  it("notes one waiting run on an unfinished run, and hands it over when that run finishes", async () => {
    const run = await pendingRun(stores);
    await lease(stores, run, T);
    expect(await stores.runs.setWake(run.jobId, run.scheduledFor, T + 1)).toBe(true);
    expect(await stores.runs.setWake(run.jobId, run.scheduledFor, T + 1)).toBe(true); // the same again
    expect(await stores.runs.setWake(run.jobId, run.scheduledFor, T + 2)).toBe(false); // one waits
    const finished = await succeed(stores, run, 1);
    expect(finished?.wakes).toEqual({ scheduledFor: T + 1, tenant: run.tenant, type: run.type });
    expect(await stores.runs.setWake(run.jobId, run.scheduledFor, T + 3)).toBe(false); // finished
  });

  it("revokes an unfinished run (fence up, cancelled with the reason), never a finished one or a last one", async () => {
    const run = await pendingRun(stores);
    await lease(stores, run, T);
    const revoked = await stores.runs.revokeRun(run.jobId, run.scheduledFor, "replaced", T + 1_000);
    expect(revoked).toMatchObject({
      status: "cancelled",
      fence: 2,
      error: "replaced",
      finishedAt: T + 1_000,
    });
    expect(await succeed(stores, run, 1)).toBeUndefined(); // the old holder's completion
    expect(await stores.runs.revokeRun(run.jobId, run.scheduledFor, "again", T + 2_000)).toBeUndefined();

    const last = await pendingRun(stores, { final: true });
    expect(await stores.runs.revokeRun(last.jobId, last.scheduledFor, "replaced", T)).toBeUndefined();
    expect(await stored(stores, last)).toMatchObject({ status: "pending" });
  });

  it("keeps a finished last run a repair candidate until it is settled; an unfinished one stays", async () => {
    const run = await pendingRun(stores, { final: true });
    await lease(stores, run, T);
    await succeed(stores, run, 1, { final: true });
    const candidates = async (of: Run) =>
      (await stores.runs.queryRepairCandidates(repairKeyOf(of.jobId), T + 3_600_000, 100)).items.map(
        (c) => c.runId,
      );
    expect(await candidates(run)).toContain(run.runId);
    await stores.runs.settleFinalRun(run.jobId, run.scheduledFor);
    expect(await candidates(run)).not.toContain(run.runId);

    const open = await pendingRun(stores, { final: true });
    await stores.runs.settleFinalRun(open.jobId, open.scheduledFor);
    expect(await candidates(open)).toContain(open.runId);
  });

  it("puts a finished last run carried by its message into the repair index once, and nothing else (decision 0045)", async () => {
    const candidates = async (of: Run) =>
      (await stores.runs.queryRepairCandidates(repairKeyOf(of.jobId), T + 3_600_000, 100)).items.map(
        (c) => c.runId,
      );
    const untracked = async (final: boolean) => {
      sequence += 1;
      const job = { jobId: `j_tracked${String(sequence).padStart(12, "0")}`, tenant: "t1", type: "x" };
      const run = scheduledRun(job, T, T, final);
      expect(await stores.runs.createRun(run)).toBe("created");
      return run;
    };
    const last = await untracked(true);
    expect(await stores.runs.trackFinalRun(last.jobId, last.scheduledFor, T + 1_000)).toBe(false); // unfinished
    await lease(stores, last, T);
    expect(await succeed(stores, last, 1, { final: true })).toMatchObject({ final: true, tracked: false });
    expect(await candidates(last)).not.toContain(last.runId);
    const untrackedIds = async () => {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await stores.runs.scanUntracked(100, cursor);
        ids.push(...page.items.map((r) => r.runId));
        cursor = page.cursor;
      } while (cursor !== undefined);
      return ids;
    };
    expect(await untrackedIds()).toContain(last.runId); // a local queue reset's scan finds it
    expect(await stores.runs.trackFinalRun(last.jobId, last.scheduledFor, T + 1_000)).toBe(true);
    expect(await untrackedIds()).not.toContain(last.runId);
    expect(await stored(stores, last)).toMatchObject({ status: "succeeded", checkAt: T + 1_000 });
    expect(await candidates(last)).toContain(last.runId);
    expect(await stores.runs.trackFinalRun(last.jobId, last.scheduledFor, T + 2_000)).toBe(false); // once
    await stores.runs.settleFinalRun(last.jobId, last.scheduledFor);
    expect(await candidates(last)).not.toContain(last.runId);

    const other = await untracked(false);
    await lease(stores, other, T);
    await succeed(stores, other, 1);
    expect(await stores.runs.trackFinalRun(other.jobId, other.scheduledFor, T + 1_000)).toBe(false);
    expect(await untrackedIds()).not.toContain(other.runId); // finished, not a last run
    expect(await stores.runs.trackFinalRun("j_nosuchjob0000000000", T, T + 1_000)).toBe(false);
  });

  it("moves a repair check only from the check time it was read with", async () => {
    const run = await pendingRun(stores);
    const candidate = { ...run, checkAt: run.checkAt ?? 0 };
    expect(await stores.runs.rescheduleCheck(candidate, candidate.checkAt + 1, T + 99_000)).toBe(false);
    expect(await stores.runs.rescheduleCheck(candidate, candidate.checkAt, T + 99_000)).toBe(true);
    expect((await stored(stores, run))?.checkAt).toBe(T + 99_000);
  });

  it("pages a job's runs newest first", async () => {
    const first = await pendingRun(stores);
    const later = newRun(first, first.scheduledFor + 60_000, T, GRACE);
    await stores.runs.createRun(later);
    const page = await stores.runs.listRuns(first.jobId, 1);
    expect(page.items.map((r) => r.runId)).toEqual([later.runId]);
    const next = await stores.runs.listRuns(first.jobId, 1, page.cursor);
    expect(next.items.map((r) => r.runId)).toEqual([first.runId]);
  });

  it("reads a job's runs by instant: between two (both included, oldest first), before one (newest first), the latest before one", async () => {
    const first = await pendingRun(stores);
    const at = (minutes: number) => first.scheduledFor + minutes * 60_000;
    for (const minutes of [1, 2, 4]) await stores.runs.createRun(newRun(first, at(minutes), T, GRACE));
    const instants = (runs: readonly Run[]) =>
      runs.map((r) => (r.scheduledFor - first.scheduledFor) / 60_000);
    expect(instants(await stores.runs.listRunsBetween(first.jobId, at(1), at(4)))).toEqual([1, 2, 4]);
    expect(instants(await stores.runs.listRunsBetween(first.jobId, at(3), at(3)))).toEqual([]);
    expect(instants(await stores.runs.listRunsBefore(first.jobId, at(4), 2))).toEqual([2, 1]);
    expect(instants(await stores.runs.listRunsBefore(first.jobId, at(0), 5))).toEqual([]);
    // A first page: before an instant past every run.
    expect(instants(await stores.runs.listRunsBefore(first.jobId, Number.POSITIVE_INFINITY, 2))).toEqual([
      4, 2,
    ]);
    expect((await stores.runs.latestRunBefore(first.jobId, Number.POSITIVE_INFINITY))?.scheduledFor).toBe(
      at(4),
    );
    expect((await stores.runs.latestRunBefore(first.jobId, at(4)))?.scheduledFor).toBe(at(2));
    expect(await stores.runs.latestRunBefore(first.jobId, at(0))).toBeUndefined();
  });
});

describe.each(kinds)("the job store %s", (_name, make) => {
  let stores: Stores;
  beforeAll(async () => {
    stores = await make();
  });

  /** A recurring job as the create use case builds it, stored fresh. */
  async function storedJob(): Promise<Job> {
    const deps = memoryDeps(T);
    const { jobId } = await createJob(
      deps,
      { tenant: "t1", principal: "p" },
      {
        type: "x",
        cron: "*/5 * * * *",
        timeZone: "UTC",
        idempotencyKey: `conformance-${++sequence}`, // a job id of its own
      },
    );
    const job = await deps.jobs.getJob(jobId);
    if (!job) throw new Error("no job");
    expect(await stores.jobs.createJob(job)).toBe("created");
    return job;
  }

  it("claims a job's run slot only from the active run it was read with, and moves updatedAt on", async () => {
    const job = await storedJob();
    expect(await stores.jobs.claimRunSlot(job.jobId, 5, 10)).toBe(false);
    expect(await stores.jobs.claimRunSlot(job.jobId, undefined, 10)).toBe(true);
    expect(await stores.jobs.claimRunSlot(job.jobId, undefined, 20)).toBe(false);
    expect(await stores.jobs.claimRunSlot(job.jobId, 10, 20)).toBe(true);
    const claimed = await stores.jobs.getJob(job.jobId);
    expect(claimed).toMatchObject({ activeRunAt: 20, updatedAt: job.updatedAt + 2 });
    // A replace that read the job before the claim fails: it would write the old slot back.
    expect(await stores.jobs.replaceJob({ ...job, payload: 1 }, job.updatedAt)).toBe(false);
  });

  it("creates a job once", async () => {
    const job = await storedJob();
    expect(await stores.jobs.createJob(job)).toBe("exists");
    expect(await stores.jobs.getJob(job.jobId)).toMatchObject({ jobId: job.jobId, status: "active" });
  });

  it("advances an active job only from the next run it was read with", async () => {
    const job = await storedJob();
    const from = job.nextRunAt ?? 0;
    expect(await stores.jobs.advanceJob(job.jobId, from + 1, from + 300_000, T)).toBe(false);
    expect(await stores.jobs.advanceJob(job.jobId, from, from + 300_000, T)).toBe(true);
    expect(await stores.jobs.advanceJob(job.jobId, from, from + 300_000, T)).toBe(false);
    expect((await stores.jobs.getJob(job.jobId))?.nextRunAt).toBe(from + 300_000);
  });

  it("records the runs an advance made: through the last of each, from the first of the first (decision 0051)", async () => {
    const { madeFrom: _, madeThrough: __, ...fresh } = await storedJob();
    const job = fresh as Job;
    await stores.jobs.replaceJob(job, job.updatedAt); // as created: nothing made yet
    const from = job.nextRunAt ?? 0;
    const block = (start: number) => ({ from: start, through: start + 240_000 });
    expect(await stores.jobs.advanceJob(job.jobId, from, from + 300_000, T, undefined, block(from))).toBe(
      true,
    );
    expect(await stores.jobs.getJob(job.jobId)).toMatchObject({
      madeFrom: from,
      madeThrough: from + 240_000,
    });
    const second = from + 300_000;
    expect(
      await stores.jobs.advanceJob(job.jobId, second, second + 300_000, T, undefined, block(second)),
    ).toBe(true);
    expect(await stores.jobs.getJob(job.jobId)).toMatchObject({
      madeFrom: from,
      madeThrough: second + 240_000,
    });
  });

  it("completes an active job only once it has no next run", async () => {
    const job = await storedJob();
    expect(await stores.jobs.completeJob(job.jobId, T)).toBe(false);
    await stores.jobs.advanceJob(job.jobId, job.nextRunAt ?? 0, undefined, T);
    expect(await stores.jobs.completeJob(job.jobId, T + 1)).toBe(true);
    expect(await stores.jobs.completeJob(job.jobId, T + 2)).toBe(false);
    expect((await stores.jobs.getJob(job.jobId))?.status).toBe("completed");
  });

  it("records the last firing when it leaves a job no next run, and completes it only from that run (decision 0046)", async () => {
    const job = await storedJob();
    const from = job.nextRunAt ?? 0;
    expect(await stores.jobs.advanceJob(job.jobId, from, undefined, T, from)).toBe(true);
    expect((await stores.jobs.getJob(job.jobId))?.lastFiringAt).toBe(from);
    // An earlier run still marked last (a schedule change came between) does not end it.
    expect(await stores.jobs.completeJob(job.jobId, T + 1, from - 300_000)).toBe(false);
    expect(await stores.jobs.completeJob(job.jobId, T + 1, from)).toBe(true);
    // A replace keeps it (the PATCH of a job whose last run is out writes the whole job).
    const other = await storedJob();
    await stores.jobs.advanceJob(other.jobId, other.nextRunAt ?? 0, undefined, T, 42);
    const advanced = await stores.jobs.getJob(other.jobId);
    if (!advanced) throw new Error("no job");
    expect(
      await stores.jobs.replaceJob({ ...advanced, payload: 2, updatedAt: T + 5 }, advanced.updatedAt),
    ).toBe(true);
    expect((await stores.jobs.getJob(other.jobId))?.lastFiringAt).toBe(42);
    // A job advanced before the firing was kept: whichever last run finishes ends it, as before.
    const legacy = await storedJob();
    await stores.jobs.advanceJob(legacy.jobId, legacy.nextRunAt ?? 0, undefined, T);
    expect(await stores.jobs.completeJob(legacy.jobId, T + 1, 7)).toBe(true);
  });

  it("replaces a job (pause, resume, cancel) only if it was not changed since it was read", async () => {
    const job = await storedJob();
    const paused = { ...job, status: "paused" as const, updatedAt: T + 10 };
    expect(await stores.jobs.replaceJob(paused, job.updatedAt + 1)).toBe(false);
    expect(await stores.jobs.replaceJob(paused, job.updatedAt)).toBe(true);
    expect(await stores.jobs.replaceJob({ ...job, updatedAt: T + 20 }, job.updatedAt)).toBe(false);
    expect((await stores.jobs.getJob(job.jobId))?.status).toBe("paused");
  });

  it("files a one-off made ahead under its group's ahead key, finds it by firing range while it is made ahead, active or paused (decision 0058)", async () => {
    const at = T + 2 * HOUR_MS + 7_000;
    const job = oneOffJob(at, T, {
      jobId: `j_ahead${String(++sequence).padStart(15, "0")}`,
      nextRunAt: undefined,
      lastFiringAt: at,
      madeAheadAt: at,
    });
    expect(await stores.jobs.createJob(job)).toBe("created");
    const key = aheadKeyOf(bucketOf(at), groupOf(job.jobId));
    const found = async (from: number, before: number) =>
      (await stores.jobs.queryAhead(key, from, before)).items.filter((e) => e.jobId === job.jobId);
    expect(await found(at - 60_000, at + 1)).toEqual([{ jobId: job.jobId, at }]);
    expect(await found(at, at + 1)).toHaveLength(1); // from is included
    expect(await found(at - 60_000, at)).toEqual([]); // before is not
    expect(await found(at + 1, at + 60_000)).toEqual([]);
    expect(
      (await stores.jobs.queryAhead(aheadKeyOf(bucketOf(at) + 1, groupOf(job.jobId)), 0, at + HOUR_MS)).items,
    ).toEqual([]);
    // Not a due-index entry the shard's sweep reads.
    expect((await stores.jobs.queryDue(dueKeyOf(bucketOf(at), shardOf(job.jobId)), at + 1)).items).toEqual(
      [],
    );
    const paused = { ...job, status: "paused" as const, updatedAt: T + 1 };
    expect(await stores.jobs.replaceJob(paused, job.updatedAt)).toBe(true);
    expect(await found(at - 60_000, at + 1)).toHaveLength(1);
    // A schedule change that supersedes its run (its last firing cleared) unfiles it; so does a cancel.
    const moved = { ...paused, status: "active" as const, lastFiringAt: undefined, updatedAt: T + 2 };
    expect(await stores.jobs.replaceJob(moved, paused.updatedAt)).toBe(true);
    expect(await found(at - 60_000, at + 1)).toEqual([]);
    const cancelled = { ...job, status: "cancelled" as const, updatedAt: T + 3 };
    expect(await stores.jobs.replaceJob(cancelled, moved.updatedAt)).toBe(true);
    expect(await found(at - 60_000, at + 1)).toEqual([]);
  });

  it("keeps the ahead ledger in one item: a tick's moves on the entries it read, rewinds never forward (decision 0059)", async () => {
    // Decision 0058's cursor is read, never written now: none on a new table.
    expect(await stores.jobs.getAheadCursor(31)).toBeUndefined();
    const before = await stores.jobs.getAheadLedger();
    const read = (group: number) => before.get(group);
    expect(
      await stores.jobs.moveAheadLedger([
        { group: 30, read: read(30), through: T + 1_000 },
        { group: 31, read: read(31), through: T + 1_000 },
      ]),
    ).toBe(true);
    let ledger = await stores.jobs.getAheadLedger();
    expect(ledger.get(30)).toEqual({ through: T + 1_000, rewoundTo: undefined, rewinds: undefined });
    // A move on a stale read changes nothing, for any of its groups.
    expect(
      await stores.jobs.moveAheadLedger([
        { group: 29, read: undefined, through: T + 9_000 },
        { group: 30, read: read(30), through: T + 9_000 },
      ]),
    ).toBe(false);
    expect((await stores.jobs.getAheadLedger()).get(29)).toBeUndefined();
    // A rewind goes back only; the next move on what it read consumes it.
    await stores.jobs.rewindAheadLedger(30, T + 800);
    await stores.jobs.rewindAheadLedger(30, T + 500); // further back: taken
    await stores.jobs.rewindAheadLedger(30, T + 900); // forward: not
    ledger = await stores.jobs.getAheadLedger();
    // Every rewind is counted, the one that moved nothing too.
    expect(ledger.get(30)).toEqual({ through: T + 1_000, rewoundTo: T + 500, rewinds: 3 });
    expect(await stores.jobs.moveAheadLedger([{ group: 30, read: ledger.get(31), through: T + 2_000 }])).toBe(
      false,
    );
    // A rewind after the tick's read that moved nothing (already as far back) still fails its
    // move: the tick's slice began at T + 500, and the sweep that failed was that slice's.
    const tickRead = ledger.get(30);
    await stores.jobs.rewindAheadLedger(30, T + 700);
    expect(await stores.jobs.moveAheadLedger([{ group: 30, read: tickRead, through: T + 2_000 }])).toBe(
      false,
    );
    ledger = await stores.jobs.getAheadLedger();
    expect(ledger.get(30)).toEqual({ through: T + 1_000, rewoundTo: T + 500, rewinds: 4 });
    expect(await stores.jobs.moveAheadLedger([{ group: 30, read: ledger.get(30), through: T + 2_000 }])).toBe(
      true,
    );
    // The move consumes the rewind and keeps the count.
    expect((await stores.jobs.getAheadLedger()).get(30)).toEqual({
      through: T + 2_000,
      rewoundTo: undefined,
      rewinds: 4,
    });
    // A rewind of a group never recorded records it there.
    await stores.jobs.rewindAheadLedger(28, T + 300);
    expect((await stores.jobs.getAheadLedger()).get(28)).toEqual({
      through: T + 300,
      rewoundTo: T + 300,
      rewinds: 1,
    });
    // Beside the group's due cursor, not in it.
    await stores.jobs.advanceSweepCursor(30, 7);
    expect(await stores.jobs.getSweepCursor(30)).toBe(7);
    expect((await stores.jobs.getAheadLedger()).get(30)?.through).toBe(T + 2_000);
  });
});
