import { OverlapPolicy } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import {
  decideOverlap,
  neverStartsAgain,
  type OverlapInput,
} from "../../lambdas/core/lifecycle/overlap-decision";
import { type Run, RunStatus } from "../../lambdas/core/run";

const T = Date.parse("2026-12-02T09:00:00Z");

const run = (scheduledFor: number, over: Partial<Run> = {}): Run => ({
  runId: `r${scheduledFor}`,
  jobId: "j1",
  tenant: "t1",
  type: "default",
  scheduledFor,
  status: RunStatus.Pending,
  attempt: 0,
  fence: 0,
  createdAt: T - 60_000,
  startedAt: undefined,
  leaseExpiresAt: undefined,
  workerId: undefined,
  finishedAt: undefined,
  error: undefined,
  checkAt: undefined,
  final: false,
  ...over,
});

/** The job's active run: leased at 09:00, its lease live for a minute more. */
const active = run(T, {
  status: RunStatus.Leased,
  attempt: 1,
  fence: 1,
  startedAt: T,
  leaseExpiresAt: T + 90_000,
});
/** A run whose lease lapsed at 09:00:35: leasable again at 09:00:35. */
const lapsed = run(T + 5_000, {
  status: RunStatus.Leased,
  attempt: 1,
  fence: 1,
  startedAt: T + 5_000,
  leaseExpiresAt: T + 35_000,
});

const input = (over: Partial<OverlapInput>): OverlapInput => ({
  policy: OverlapPolicy.CancelPrevious,
  backfill: false,
  atMostOnce: false,
  maxAttempts: 3,
  own: lapsed,
  startsAt: T + 36_000,
  active,
  waiting: undefined,
  now: T + 36_000,
  ...over,
});

describe("neverStartsAgain", () => {
  it("is true once the attempts are used up, and under at-most-once once leased", () => {
    const cases: Array<[number, number, boolean, boolean]> = [
      // attempt, maxAttempts, atMostOnce, expected
      [0, 1, false, false],
      [1, 1, false, true],
      [1, 3, false, false],
      [3, 3, false, true],
      [0, 3, true, false],
      [1, 3, true, true],
      [2, 5, true, true],
    ];
    for (const [attempt, maxAttempts, atMostOnce, expected] of cases)
      expect(
        neverStartsAgain({ attempt }, { maxAttempts, atMostOnce }),
        `${attempt}/${maxAttempts} ${atMostOnce}`,
      ).toBe(expected);
  });
});

describe("decideOverlap: a run that will never start again displaces nothing", () => {
  for (const policy of [OverlapPolicy.Skip, OverlapPolicy.BufferOne, OverlapPolicy.CancelPrevious]) {
    it(`${policy}: a lapsed at-most-once run is only ended`, () => {
      expect(decideOverlap(input({ policy, atMostOnce: true }))).toEqual({ kind: "end-own" });
    });
    it(`${policy}: the same run under at-least-once, attempts left, goes through the policy`, () => {
      expect(decideOverlap(input({ policy })).kind).not.toBe("end-own");
    });
  }

  it("buffer-one: a waiter that will never start again holds the buffer place no longer", () => {
    const waiter = lapsed;
    const next = run(T + 120_000);
    const base = {
      policy: OverlapPolicy.BufferOne,
      own: next,
      startsAt: T + 120_000,
      now: T + 120_000,
      active: { ...active, leaseExpiresAt: T + 150_000, wakes: waiter.scheduledFor },
      waiting: waiter,
    };
    expect(decideOverlap(input({ ...base, atMostOnce: true }))).toEqual({
      kind: "buffer",
      replacing: waiter.scheduledFor,
      until: T + 150_000,
    });
    expect(decideOverlap(input(base)).kind).toBe("skip");
  });
});

describe("decideOverlap: an active run that will never start again holds no place", () => {
  // The active run's lease lapsed on its last attempt: its next lease only dead-letters it.
  const dead = { ...active, leaseExpiresAt: T + 5_000 };
  const next = run(T + 60_000);
  const base = { own: next, startsAt: T + 60_000, now: T + 60_000, maxAttempts: 1, active: dead };

  for (const policy of [OverlapPolicy.Skip, OverlapPolicy.BufferOne, OverlapPolicy.CancelPrevious])
    it(`${policy}: a newer run leases rather than wait, skip or revoke`, () => {
      expect(decideOverlap(input({ ...base, policy }))).toEqual({ kind: "lease" });
      // With attempts left, the lapsed run will start again: it still holds its place.
      expect(decideOverlap(input({ ...base, policy, maxAttempts: 2 })).kind).not.toBe("lease");
      // On its last attempt but running (its lease live), it holds its place too.
      expect(decideOverlap(input({ ...base, policy, active: active })).kind).not.toBe("lease");
    });

  it("buffer-one: the dead active run's waiter goes first; an older run waits, a newer one is skipped", () => {
    const waiter = run(T + 90_000);
    const queued = {
      ...base,
      policy: OverlapPolicy.BufferOne,
      active: { ...dead, wakes: waiter.scheduledFor },
      waiting: waiter,
    };
    expect(
      decideOverlap(
        input({ ...queued, own: waiter, waiting: undefined, startsAt: T + 90_000, now: T + 90_000 }),
      ),
    ).toEqual({ kind: "lease" });
    // A replay, older than the waiter, is not skipped: it waits and runs after it.
    const replayed = run(T + 30_000, { replays: 1 });
    expect(decideOverlap(input({ ...queued, own: replayed }))).toEqual({ kind: "wait", until: T + 60_000 });
    const newer = run(T + 120_000);
    expect(
      decideOverlap(input({ ...queued, own: newer, startsAt: T + 120_000, now: T + 120_000 })).kind,
    ).toBe("skip");
  });
});

describe("decideOverlap: a run leased before is never skipped", () => {
  // The crash loop's case: a run leased under allow, its lease lapsed; a PATCH made the job skip,
  // and an older run's lapsed lease was taken again first. The newer run may have run: it waits.
  const older = { ...active, scheduledFor: T - 60_000, fence: 2 };
  for (const policy of [OverlapPolicy.Skip, OverlapPolicy.BufferOne]) {
    it(`${policy}: it waits for the active run; one never leased is skipped as before`, () => {
      const buffered = policy === OverlapPolicy.BufferOne ? { wakes: T + 60_000 } : {};
      const over = { policy, active: { ...older, ...buffered }, waiting: run(T + 60_000) };
      expect(decideOverlap(input(over))).toEqual({ kind: "wait", until: older.leaseExpiresAt });
      const fresh = run(T + 5_000);
      expect(decideOverlap(input({ ...over, own: fresh })).kind).toBe("skip");
    });
  }
});
