import type { RunResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { latenessByMinute, percentile } from "../../console/lateness";

const run = (scheduledFor: string, startedAt?: string): RunResponse => ({
  runId: `r_${scheduledFor}`,
  runKey: `j@${scheduledFor}`,
  scheduledFor,
  status: startedAt ? "succeeded" : "pending",
  attempt: startedAt ? 1 : 0,
  fence: startedAt ? 1 : 0,
  ...(startedAt ? { startedAt } : {}),
});

describe("the console's lateness chart data", () => {
  it("takes nearest-rank percentiles", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it("groups started runs by the minute they were due, p50 and p99 each, ignoring runs not started", () => {
    const series = latenessByMinute([
      run("2026-12-01T10:00:00Z", "2026-12-01T10:00:00.040Z"),
      run("2026-12-01T10:00:30Z", "2026-12-01T10:00:30.010Z"),
      run("2026-12-01T10:00:45Z", "2026-12-01T10:00:45.900Z"),
      run("2026-12-01T10:02:00Z", "2026-12-01T10:01:59.000Z"), // started early: 0, not negative
      run("2026-12-01T10:03:00Z"),
    ]);
    expect(series.minutes).toEqual([
      Date.UTC(2026, 11, 1, 10, 0) / 1000,
      Date.UTC(2026, 11, 1, 10, 2) / 1000,
    ]);
    expect(series.p50).toEqual([40, 0]);
    expect(series.p99).toEqual([900, 0]);
  });
});
