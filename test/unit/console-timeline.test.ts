import type { RunResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { durationText, runTimeline } from "../../console/run-timeline";

/** The console's run timeline (decision 0063): attempts, fences, the bar, what is not listed. */
const base: RunResponse = {
  runId: "r1",
  runKey: "j@2026-12-06T09:00:00Z",
  scheduledFor: "2026-12-06T09:00:00Z",
  status: "pending",
  attempt: 0,
  fence: 0,
};
const failed = (attempt: number, startedAt: string, failedAt: string, error = "boom") => ({
  attempt,
  fence: attempt,
  startedAt,
  failedAt,
  error,
});

describe("a run's timeline in the console", () => {
  it("shows a retried run's two attempts: the failure it kept and the success, with their fences", () => {
    const timeline = runTimeline({
      ...base,
      status: "succeeded",
      attempt: 2,
      fence: 2,
      startedAt: "2026-12-06T09:00:20Z",
      finishedAt: "2026-12-06T09:00:30Z",
      failedAttempts: [failed(1, "2026-12-06T09:00:00.500Z", "2026-12-06T09:00:10Z", "timeout")],
    });
    expect(timeline.lines).toEqual([
      { attempt: 1, fence: 1, startedAfter: 500, took: 9_500, outcome: "failed", error: "timeout" },
      { attempt: 2, fence: 2, startedAfter: 20_000, took: 10_000, outcome: "succeeded", error: undefined },
    ]);
    // The bar runs from 09:00:00 to 09:00:30: waiting, the failed attempt, the successful one.
    expect(timeline.segments).toEqual([
      { kind: "wait", from: 0, to: 500 / 30_000 },
      { kind: "failed", from: 500 / 30_000, to: 10 / 30 },
      { kind: "succeeded", from: 20 / 30, to: 1 },
    ]);
    expect(timeline).toMatchObject({ span: 30_000, unlisted: 0, retry: undefined, ending: undefined });
  });

  it("shows a waiting retry: the failed attempt, and when the retry may start; not the failure twice", () => {
    const timeline = runTimeline({
      ...base,
      attempt: 1,
      fence: 1,
      startedAt: "2026-12-06T09:00:00Z",
      retryAt: "2026-12-06T09:00:40Z",
      error: "boom",
      failedAttempts: [failed(1, "2026-12-06T09:00:00Z", "2026-12-06T09:00:10Z")],
    });
    expect(timeline.lines.map((l) => [l.attempt, l.outcome])).toEqual([[1, "failed"]]);
    expect(timeline.retry).toEqual({ at: 1, after: 40_000 });
    expect(timeline.ending).toBeUndefined();
  });

  it("counts an attempt whose lease lapsed as not listed, and shows the lease that runs now", () => {
    const timeline = runTimeline({
      ...base,
      status: "leased",
      attempt: 2,
      fence: 2,
      startedAt: "2026-12-06T09:01:00Z",
      leaseExpiresAt: "2026-12-06T09:01:30Z",
    });
    expect(timeline.unlisted).toBe(1);
    expect(timeline.lines).toEqual([
      { attempt: 2, fence: 2, startedAfter: 60_000, took: undefined, outcome: "running", error: undefined },
    ]);
    expect(timeline.segments.at(-1)).toEqual({ kind: "running", from: 60 / 90, to: 1 });
  });

  it("ends a run that never started with its reason, and lists nothing for it", () => {
    const timeline = runTimeline({
      ...base,
      status: "missed",
      finishedAt: "2026-12-06T09:10:00Z",
      error: "started later than maxLateness",
    });
    expect(timeline).toMatchObject({
      lines: [],
      unlisted: 0,
      ending: { status: "missed", reason: "started later than maxLateness" },
    });
  });

  it("keeps a replayed run's earlier failures without counting its old attempts as unlisted", () => {
    const timeline = runTimeline({
      ...base,
      attempt: 0,
      fence: 3,
      replays: 1,
      startedAt: "2026-12-06T09:00:20Z",
      failedAttempts: [failed(1, "2026-12-06T09:00:00Z", "2026-12-06T09:00:10Z")],
    });
    expect(timeline.lines.map((l) => l.outcome)).toEqual(["failed"]);
    expect(timeline.unlisted).toBe(0);
  });

  it("writes durations as people read them", () => {
    expect([420, 1_400, 12_000, 125_000, 11_400_000, 190_000_000, -2_000].map(durationText)).toEqual([
      "420 ms",
      "1.4 s",
      "12 s",
      "2 min 5 s",
      "3 h 10 min",
      "2 d 4 h",
      "-2.0 s",
    ]);
  });
});
