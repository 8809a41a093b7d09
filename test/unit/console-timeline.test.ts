import type { RunResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { clockText, durationText, rangesText, runTimeline } from "../../console/run-timeline";

/** The console's run timeline (decision 0063): attempts, fences, the bar, what is not listed. */
const T = Date.parse("2026-12-06T09:00:00Z");
const NOW = T + 3_600_000;
const base: RunResponse = {
  runId: "r1",
  runKey: "j@2026-12-06T09:00:00Z",
  scheduledFor: "2026-12-06T09:00:00Z",
  status: "pending",
  attempt: 0,
  fence: 0,
};
const at = (ms: number) => new Date(T + ms).toISOString();
const failed = (attempt: number, fence: number, startedAt: number, failedAt: number, error = "boom") => ({
  attempt,
  fence,
  startedAt: at(startedAt),
  failedAt: at(failedAt),
  error,
});

describe("a run's timeline in the console", () => {
  it("shows a retried run's two attempts: the failure it kept and the success, with their fences", () => {
    const timeline = runTimeline(
      {
        ...base,
        status: "succeeded",
        attempt: 2,
        fence: 2,
        startedAt: at(20_000),
        finishedAt: at(30_000),
        failedAttempts: [failed(1, 1, 500, 10_000, "timeout")],
      },
      NOW,
    );
    expect(timeline.lines).toEqual([
      {
        attempt: 1,
        fence: 1,
        runFence: 2,
        startedAt: T + 500,
        startedAfter: 500,
        took: 9_500,
        outcome: "failed",
        error: "timeout",
      },
      {
        attempt: 2,
        fence: 2,
        runFence: 2,
        startedAt: T + 20_000,
        startedAfter: 20_000,
        took: 10_000,
        outcome: "succeeded",
        error: undefined,
      },
    ]);
    // The bar runs from 09:00:00 to 09:00:30: waiting, the failed attempt, the successful one.
    expect(timeline.segments).toEqual([
      { kind: "wait", from: 0, to: 500 / 30_000 },
      { kind: "failed", from: 500 / 30_000, to: 10 / 30 },
      { kind: "succeeded", from: 20 / 30, to: 1 },
    ]);
    expect(timeline).toMatchObject({ span: 30_000, unlistedFences: "", retry: undefined, ending: undefined });
  });

  it("shows a waiting retry: the failed attempt, and when the retry may start; not the failure twice", () => {
    const timeline = runTimeline(
      {
        ...base,
        attempt: 1,
        fence: 1,
        startedAt: at(0),
        retryAt: at(40_000),
        error: "boom",
        failedAttempts: [failed(1, 1, 0, 10_000)],
      },
      NOW,
    );
    expect(timeline.lines.map((l) => [l.attempt, l.outcome])).toEqual([[1, "failed"]]);
    expect(timeline.retry).toEqual({ at: 1, after: 40_000 });
    expect(timeline).toMatchObject({ ending: undefined, unlistedFences: "" });
  });

  it("shows the attempt that runs now without the error of the one before it", () => {
    const timeline = runTimeline(
      {
        ...base,
        status: "leased",
        attempt: 2,
        fence: 2,
        startedAt: at(20_000),
        leaseExpiresAt: at(50_000),
        error: "boom", // a lease keeps the failure's error
        failedAttempts: [failed(1, 1, 0, 10_000)],
      },
      T + 25_000,
    );
    expect(timeline.lines.at(-1)).toMatchObject({
      attempt: 2,
      fence: 2,
      outcome: "running",
      error: undefined,
      leaseUntil: T + 50_000,
    });
    // The bar reaches now (09:00:25), not the lease's end: a heartbeat would move that.
    expect(timeline.segments.at(-1)).toEqual({ kind: "running", from: 0.8, to: 1 });
    expect(timeline.span).toBe(25_000);
  });

  it("says a lease lapsed once its time is up, and names the lapsed lease before it as not listed", () => {
    const run: RunResponse = {
      ...base,
      status: "leased",
      attempt: 2,
      fence: 2,
      startedAt: at(60_000),
      leaseExpiresAt: at(90_000),
    };
    expect(runTimeline(run, T + 70_000).lines).toMatchObject([{ outcome: "running" }]);
    const timeline = runTimeline(run, T + 90_000);
    expect(timeline.lines).toMatchObject([{ attempt: 2, fence: 2, outcome: "lapsed", took: 30_000 }]);
    expect(timeline.unlistedFences).toBe("1");
  });

  it("does not list a revoked lease's attempt twice, nor claim the fence the cancel raised", () => {
    // A waiting retry cancelled (cancel-previous): the fence rose, no lease came after the failure.
    const waiting = runTimeline(
      {
        ...base,
        status: "cancelled",
        attempt: 1,
        fence: 2,
        startedAt: at(0),
        finishedAt: at(300_000),
        error: "a newer run replaced it",
        failedAttempts: [failed(1, 1, 0, 10_000)],
      },
      NOW,
    );
    expect(waiting.lines.map((l) => [l.attempt, l.fence, l.outcome])).toEqual([[1, 1, "failed"]]);
    expect(waiting).toMatchObject({
      unlistedFences: "",
      ending: { status: "cancelled", reason: "a newer run replaced it" },
    });
    // A lease revoked while it ran: its line leaves the fence open (2 or 3), and nothing is missing.
    const revoked = runTimeline(
      {
        ...base,
        status: "cancelled",
        attempt: 2,
        fence: 3,
        startedAt: at(20_000),
        finishedAt: at(25_000),
        error: "a newer run replaced it",
        failedAttempts: [failed(1, 1, 0, 10_000)],
      },
      NOW,
    );
    expect(revoked.lines.at(-1)).toMatchObject({
      attempt: 2,
      fence: undefined,
      runFence: 3,
      outcome: "cancelled",
    });
    expect(revoked.unlistedFences).toBe("");
  });

  it("names the leases a replay's earlier round ended with, as not listed", () => {
    // Round 1: attempt 1 failed and retried (listed), attempt 2 dead-lettered (not recorded);
    // replayed; round 2: attempt 1 lapsed (fence 3), attempt 2 (fence 4) runs now.
    const timeline = runTimeline(
      {
        ...base,
        status: "leased",
        attempt: 2,
        fence: 4,
        replays: 1,
        startedAt: at(500_000),
        leaseExpiresAt: at(530_000),
        failedAttempts: [failed(1, 1, 0, 10_000)],
      },
      T + 510_000,
    );
    expect(timeline.lines.map((l) => [l.attempt, l.fence, l.outcome])).toEqual([
      [1, 1, "failed"],
      [2, 4, "running"],
    ]);
    expect(timeline.unlistedFences).toBe("2-3");
  });

  it("ends a run that never started with its reason, and lists nothing for it", () => {
    const timeline = runTimeline(
      { ...base, status: "missed", finishedAt: at(600_000), error: "started later than maxLateness" },
      NOW,
    );
    expect(timeline).toMatchObject({
      lines: [],
      unlistedFences: "",
      ending: { status: "missed", reason: "started later than maxLateness" },
    });
  });

  it("places the latest attempt at the end of the bar however long the run spans (console.css keeps its least width inside)", () => {
    const timeline = runTimeline(
      {
        ...base,
        status: "succeeded",
        attempt: 1,
        fence: 1,
        startedAt: at(86_400_000),
        finishedAt: at(86_400_001),
      },
      NOW,
    );
    expect(timeline.segments.at(-1)).toMatchObject({ kind: "succeeded", to: 1 });
    expect(timeline.segments.at(-1)?.from).toBeLessThan(1);
  });

  it("writes numbers, durations and instants as people read them", () => {
    expect(rangesText([1, 2, 3, 5, 7, 8])).toBe("1-3, 5, 7-8");
    expect(rangesText([])).toBe("");
    expect(
      [420, 999.6, 1_400, 9_960, 12_000, 59_999, 125_000, 11_400_000, 190_000_000, -2_000].map(durationText),
    ).toEqual([
      "420 ms",
      "1.0 s",
      "1.4 s",
      "10 s",
      "12 s",
      "1 min 0 s",
      "2 min 5 s",
      "3 h 10 min",
      "2 d 4 h",
      "-2.0 s",
    ]);
    expect(clockText(T + 412)).toBe("09:00:00.412Z");
  });
});
