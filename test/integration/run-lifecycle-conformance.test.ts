import { GetCommand } from "@aws-sdk/lib-dynamodb";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { runKey } from "../../lambdas/adapters/dynamo/run-item";
import {
  leasableFrom,
  type RunEvent,
  type RunRecord,
  transition,
} from "../../lambdas/core/lifecycle/transition";
import type { RunStore } from "../../lambdas/core/ports";
import { type FailedAttempt, type Run, RunStatus } from "../../lambdas/core/run";
import { createTestStack } from "../support/stack";

/**
 * The DynamoDB run store writes each lifecycle event as one conditional update (its guard as
 * the ConditionExpression); this checks, for generated runs in every state and every event with
 * parameters near its guard's edges, that the store on dynalite refuses exactly what
 * `transition` refuses and otherwise leaves the run exactly as `transition` says (issue 27).
 */
const T = Date.UTC(2026, 11, 2, 9, 0, 0);
const statuses = Object.values(RunStatus);

const near = (base: number) => fc.constantFrom(base - 5_000, base, base + 5_000);
const maybe = <V>(arbitrary: fc.Arbitrary<V>) => fc.option(arbitrary, { nil: undefined });

function failedAttempt(attempt: number, startedAt: number): FailedAttempt {
  return { attempt, fence: attempt, startedAt, failedAt: startedAt + 300, error: `attempt ${attempt}: ✗ no` };
}

const runArbitrary: fc.Arbitrary<RunRecord> = fc
  .record({
    status: fc.constantFrom(...statuses),
    attempt: fc.integer({ min: 0, max: 3 }),
    extraFence: fc.integer({ min: 0, max: 2 }),
    leaseExpiresAt: maybe(near(T)),
    retryAt: maybe(near(T)),
    checkAt: maybe(near(T + 30_000)),
    final: fc.boolean(),
    wakes: maybe(fc.constantFrom(T + 60_000, T + 120_000)),
    replays: maybe(fc.integer({ min: 1, max: 2 })),
    origin: maybe(fc.constantFrom("manual" as const, "backfill" as const)),
    error: maybe(fc.constant("earlier failure")),
    failedAttempts: maybe(fc.constant([failedAttempt(1, T - 9_500)])),
    // The receive its lease came from: mostly another's, sometimes the lease event's own ("rh-1":
    // that lease is a lost answer's retry), so a lapsed lease's takeover is tested too.
    receiptHandle: fc.constantFrom("rh-0", "rh-0", "rh-1"),
  })
  .map((r) => {
    const finished = r.status !== RunStatus.Pending && r.status !== RunStatus.Leased;
    return {
      runId: "",
      jobId: "",
      tenant: "t1",
      type: "x",
      scheduledFor: T - 10_000,
      status: r.status,
      attempt: r.attempt,
      fence: r.attempt + r.extraFence,
      createdAt: T - 20_000,
      // A lease starts a run no earlier than it is due (its retry's time included).
      startedAt: r.status === RunStatus.Leased ? Math.max(T - 9_000, r.retryAt ?? 0) : undefined,
      leaseExpiresAt: r.status === RunStatus.Leased ? (r.leaseExpiresAt ?? T) : undefined,
      workerId: r.status === RunStatus.Leased ? "w0" : undefined,
      receiptHandle: r.status === RunStatus.Leased ? r.receiptHandle : undefined,
      finishedAt: finished ? T - 1_000 : undefined,
      error: r.error,
      checkAt: r.checkAt,
      final: r.final,
      ...(r.retryAt === undefined ? {} : { retryAt: r.retryAt }),
      ...(r.wakes === undefined ? {} : { wakes: r.wakes }),
      ...(r.replays === undefined ? {} : { replays: r.replays }),
      ...(r.origin === undefined ? {} : { origin: r.origin }),
      ...(r.failedAttempts === undefined ? {} : { failedAttempts: r.failedAttempts }),
    };
  });

/** An event for `run`, its fence, instant and `final` at, just off, or far from what the guard asks. */
function eventArbitrary(run: Run): fc.Arbitrary<RunEvent> {
  const fence = fc.constantFrom(run.fence, run.fence + 1, Math.max(0, run.fence - 1));
  const now = near(run.leaseExpiresAt ?? T);
  const final = fc.constantFrom(run.final, !run.final);
  return fc.oneof(
    fc.record({
      kind: fc.constant("lease" as const),
      grant: fc.record({
        workerId: fc.constant("w1"),
        startsAt: near(T),
        leaseExpiresAt: fc.constant(T + 30_000),
        receiptHandle: fc.constantFrom("rh-1", "rh-2"),
        now: fc.constant(T),
        firstOnly: fc.boolean(),
        // A copy's seed, marked last or not: one marked last makes the written run last.
        seed: maybe(
          fc.boolean().map((final) => ({
            runId: run.runId,
            jobId: run.jobId,
            tenant: run.tenant,
            type: run.type,
            scheduledFor: run.scheduledFor,
            final,
            createdAt: run.createdAt,
          })),
        ),
      }),
    }),
    fc.record({
      kind: fc.constant("heartbeat" as const),
      fence,
      leaseExpiresAt: fc.constant(T + 60_000),
      now,
    }),
    fc.record({
      kind: fc.constant("finish" as const),
      fence,
      outcome: fc.record({
        status: fc.constantFrom(RunStatus.Succeeded, RunStatus.DeadLettered),
        // Sometimes what a generated finished run holds: the finish's own repeat.
        error: maybe(fc.constantFrom("boom", "earlier failure")),
        now: fc.constantFrom(T, T - 1_000),
        final,
      }),
      tenants: maybe(fc.constantFrom(["t1"], ["t2"])),
    }),
    fc.record({
      kind: fc.constant("retry" as const),
      fence,
      plan: fc.record({
        error: fc.constant("retry me"),
        // Sometimes the instants a generated pending run already has: the retry's own repeat.
        retryAt: fc.constantFrom(T + 10_000, T + 5_000),
        checkAt: fc.constantFrom(T + 40_000, T + 35_000),
        now: fc.constant(T),
        // With the list it keeps (one started, one whose start is unknown), or without one.
        failedAttempts: maybe(
          fc.constantFrom(
            [failedAttempt(1, T - 9_500), failedAttempt(2, T - 9_000)],
            [{ ...failedAttempt(2, T), startedAt: undefined }],
          ),
        ),
      }),
    }),
    fc.record({ kind: fc.constant("return-lease" as const), fence, now: fc.constant(T) }),
    fc.record({
      kind: fc.constant("replay" as const),
      from: fc.constantFrom("dead-lettered" as const, "missed" as const),
      by: fc.constant("operator"),
      now: fc.constant(T),
      checkAt: fc.constant(T + 30_000),
      keepsAttempts: fc.boolean(),
    }),
    fc.record({
      kind: fc.constant("abandon" as const),
      status: fc.constantFrom("cancelled" as const, "missed" as const, "skipped" as const),
      reason: fc.constant("why"),
      now,
      final,
    }),
    fc.record({ kind: fc.constant("lose" as const), reason: fc.constant("lost"), now, final }),
    fc.record({ kind: fc.constant("revoke" as const), reason: fc.constant("replaced"), now: fc.constant(T) }),
    fc.record({
      kind: fc.constant("miss" as const),
      reason: fc.constant("late"),
      now: fc.constant(T),
      final,
    }),
    fc.record({
      kind: fc.constant("drop-retry" as const),
      reason: fc.constant("at-most-once"),
      now: fc.constant(T),
      final,
    }),
    fc.record({
      kind: fc.constant("wake" as const),
      waiting: fc.constantFrom(T + 60_000, T + 120_000),
      replacing: maybe(fc.constantFrom(T + 60_000, T + 120_000)),
    }),
    fc.constant({ kind: "settle" as const }),
    fc.record({ kind: fc.constant("track" as const), checkAt: fc.constant(T + 45_000) }),
    fc.constant({ kind: "mark-last" as const }),
    fc.record({
      kind: fc.constant("recheck" as const),
      expectedCheckAt: fc.constantFrom(run.checkAt ?? T, T + 1),
      checkAt: fc.constant(T + 90_000),
    }),
  );
}

/**
 * Applies the event through the store's own method; whether the store says it applied it, or,
 * for the events answered with the run (a lease, a give-back), that run.
 */
async function applyThroughStore(
  runs: RunStore,
  run: Run,
  event: RunEvent,
): Promise<Run | boolean | undefined> {
  const { jobId, scheduledFor: at } = run;
  switch (event.kind) {
    case "lease":
      return (await runs.leaseRun(jobId, at, event.grant)) ?? false;
    case "heartbeat":
      return (await runs.heartbeatRun(jobId, at, event.fence, event.leaseExpiresAt, event.now)) !== undefined;
    case "finish":
      return (await runs.finishRun(jobId, at, event.fence, event.outcome, event.tenants)) !== undefined;
    case "retry":
      return (await runs.retryRun(jobId, at, event.fence, event.plan)) !== undefined;
    case "return-lease":
      return (await runs.returnLease(jobId, at, event.fence, event.now)) ?? false;
    case "replay":
      return (await runs.replayRun(jobId, at, event, event.from)) !== undefined;
    case "abandon":
      return (
        (await runs.abandonRun(jobId, at, event.status, event.reason, event.now, event.final)) !== undefined
      );
    case "lose":
      return (await runs.loseRun(jobId, at, event)) !== undefined;
    case "revoke":
      return (await runs.revokeRun(jobId, at, event.reason, event.now)) !== undefined;
    case "miss":
      return (await runs.missRun(jobId, at, event)) !== undefined;
    case "drop-retry":
      return (await runs.dropRetry(jobId, at, event)) !== undefined;
    case "wake":
      return runs.setWake(jobId, at, event.waiting, event.replacing);
    case "settle":
      await runs.settleFinalRun(jobId, at);
      return undefined; // answers nothing: judged by the run read back
    case "track":
      return runs.trackFinalRun(jobId, at, event.checkAt);
    case "mark-last":
      return (await runs.markLastRun(jobId, at)) !== undefined;
    case "recheck": {
      const candidate = { ...run, checkAt: event.expectedCheckAt };
      return runs.rescheduleCheck(candidate, event.expectedCheckAt, event.checkAt);
    }
  }
}

/** The run as the store reads it back: what `transition` must predict (the receipt handle is not read). */
function comparable(run: Run | undefined) {
  if (!run) return undefined;
  const { receiptHandle: _, ...rest } = run as Run & { receiptHandle?: string };
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
}

/**
 * What the store keeps beside the run, derived from it, which leasing and the indexes rely on:
 * the repair index's key while a check is due, the dead-letter index's key on a dead letter, and
 * `availableAt`, the one comparison a lease makes (from when `transition` would lease it; a
 * pending run leasable at the event's time either way may carry that time instead).
 */
function expectDerived(
  raw: Record<string, unknown> | undefined,
  before: Run,
  expected: Run,
  event: RunEvent,
  context: string,
) {
  expect(raw?.repairKey !== undefined, `repairKey: ${context}`).toBe(expected.checkAt !== undefined);
  // (A generated row is created without it; only an event that dead-letters the run sets it.)
  if (expected.status === RunStatus.DeadLettered && before.status !== RunStatus.DeadLettered)
    expect(raw?.deadTenant, `deadTenant: ${context}`).toBe(expected.tenant);
  if (expected.status === RunStatus.Pending)
    expect(raw?.deadTenant, `deadTenant: ${context}`).toBeUndefined();
  const from = leasableFrom(expected);
  if (from === undefined) return;
  const at = Number(raw?.availableAt);
  const now = "now" in event ? event.now : Number.NEGATIVE_INFINITY;
  if (expected.status === RunStatus.Leased || at !== from)
    expect(
      expected.status === RunStatus.Pending && at <= now && from <= now ? from : at,
      `availableAt: ${context}`,
    ).toBe(from);
}

describe("the DynamoDB run store applies the lifecycle's transitions", () => {
  let runs: RunStore;
  let raw: (jobId: string, scheduledFor: number) => Promise<Record<string, unknown> | undefined>;
  beforeAll(async () => {
    const stack = await createTestStack("lifecycle");
    runs = stack.deps.runs;
    raw = async (jobId, scheduledFor) =>
      (
        await stack.db.send(
          new GetCommand({
            TableName: stack.config.tableName,
            Key: runKey(jobId, scheduledFor),
            ConsistentRead: true,
          }),
        )
      ).Item;
  });

  it("refuses what transition refuses and writes what it says, for every event on generated runs", async () => {
    let sequence = 0;
    await fc.assert(
      fc.asyncProperty(
        runArbitrary.chain((run) => fc.tuple(fc.constant(run), eventArbitrary(run))),
        async ([shape, event]) => {
          sequence += 1;
          const jobId = `j_lifecycle${String(sequence).padStart(9, "0")}`;
          const run = { ...shape, jobId, runId: `r_${jobId.slice(2)}_${shape.scheduledFor}` };
          expect(await runs.createRun(run)).toBe("created");
          const expected = transition(run, event);
          const applied = await applyThroughStore(runs, run, event);
          const stored = await runs.getRun(jobId, run.scheduledFor);
          if (applied !== undefined)
            expect(applied !== false, `applied: ${JSON.stringify(event)}`).toBe(expected !== undefined);
          // A run answered is the run as the transition leaves it (a repeat's too: unchanged).
          if (typeof applied === "object")
            expect(comparable(applied), `answered: ${JSON.stringify(event)}`).toEqual(comparable(expected));
          expect(comparable(stored), JSON.stringify({ run, event })).toEqual(comparable(expected ?? run));
          if (expected)
            expectDerived(
              await raw(jobId, run.scheduledFor),
              run,
              expected,
              event,
              JSON.stringify({ run, event }),
            );
        },
      ),
      { numRuns: 1_500, seed: 27 },
    );
  }, 120_000);
});
