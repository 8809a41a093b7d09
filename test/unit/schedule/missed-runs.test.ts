import { describe, expect, it } from "vitest";
import {
  CATCH_UP_CAP,
  MAX_FIRINGS_PER_PLAN,
  type MissedRunPolicy,
  planRuns,
} from "../../../lambdas/core/missed-runs";
import type { Schedule } from "../../../lambdas/core/schedule/schedule";

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0); // 10:00Z
const every5: Schedule = { kind: "cron", cron: "*/5 * * * *", timeZone: "UTC" };
const at = (minutes: number) => T0 + minutes * MIN;
const plan = (
  policy: MissedRunPolicy,
  now: number,
  extra: { maxLatenessMs?: number; horizon?: number } = {},
) =>
  planRuns(every5, { policy, graceMs: 30_000, maxLatenessMs: extra.maxLatenessMs }, T0, now, extra.horizon);

describe("a 20-minute outage of a job that runs every 5 minutes", () => {
  // The 10:00 run was handled; nothing ran from 10:01 until 10:21. 10:05, 10:10, 10:15 and
  // 10:20 were missed.
  const now = at(21);

  it("catch-up runs all four missed firings", () => {
    const p = plan("catch-up", now);
    expect(p.create).toEqual([at(5), at(10), at(15), at(20)]);
    expect(p.missed).toEqual([]);
    expect(p.next).toBe(at(25));
  });

  it("run-once runs one, for the latest missed firing, and records the others as missed", () => {
    const p = plan("run-once", now);
    expect(p.create).toEqual([at(20)]);
    expect(p.missed.map((m) => m.scheduledFor)).toEqual([at(5), at(10), at(15)]);
    expect(p.missed[0]?.reason).toContain("2026-11-02T10:20:00Z");
    expect(p.next).toBe(at(25));
  });

  it("skip runs none and waits for 10:25", () => {
    const p = plan("skip", now);
    expect(p.create).toEqual([]);
    expect(p.missed.map((m) => m.scheduledFor)).toEqual([at(5), at(10), at(15), at(20)]);
    expect(p.missed.every((m) => m.reason.includes("skip"))).toBe(true);
    expect(p.next).toBe(at(25));
  });

  describe("with maxLateness of 8 minutes", () => {
    const maxLatenessMs = 8 * MIN;

    it("catch-up runs only the firings at most 8 minutes late; the older are missed as too late", () => {
      const p = plan("catch-up", now, { maxLatenessMs });
      expect(p.create).toEqual([at(15), at(20)]);
      expect(p.missed.map((m) => m.scheduledFor)).toEqual([at(5), at(10)]);
      expect(p.missed.every((m) => m.reason.includes("maxLateness"))).toBe(true);
    });

    it("run-once still runs the latest, which is on time enough", () => {
      const p = plan("run-once", now, { maxLatenessMs });
      expect(p.create).toEqual([at(20)]);
      expect(p.missed.map((m) => [m.scheduledFor, m.reason.includes("maxLateness")])).toEqual([
        [at(5), true],
        [at(10), true],
        [at(15), false],
      ]);
    });

    it("run-once runs nothing when even the latest missed firing is too late", () => {
      const p = plan("run-once", at(29), { maxLatenessMs: 2 * MIN });
      expect(p.create).toEqual([]);
      expect(p.missed).toHaveLength(5);
    });

    it("skip records every firing, each with its reason", () => {
      const p = plan("skip", now, { maxLatenessMs });
      expect(p.create).toEqual([]);
      expect(p.missed.map((m) => m.reason.includes("maxLateness"))).toEqual([true, true, false, false]);
    });
  });
});

describe("planning in normal operation", () => {
  it("treats a firing a few seconds late as due, not missed, under every policy", () => {
    for (const policy of ["catch-up", "run-once", "skip"] as const) {
      expect(plan(policy, at(5) + 10_000)).toMatchObject({ create: [at(5)], missed: [], next: at(10) });
    }
  });

  it("records even an on-time firing as missed when maxLateness is shorter than the grace", () => {
    const p = plan("run-once", at(5) + 20_000, { maxLatenessMs: 10_000 });
    expect(p.create).toEqual([]);
    expect(p.missed).toEqual([
      { scheduledFor: at(5), reason: expect.stringContaining("maxLateness (10 s)") },
    ]);
  });

  it("creates the firings inside the sweep's lookahead and nothing beyond it", () => {
    const p = plan("skip", at(4), { horizon: at(11) });
    expect(p).toEqual({ create: [at(5), at(10)], missed: [], next: at(15) });
  });

  it("plans nothing and reports the next firing when nothing is due", () => {
    expect(plan("run-once", at(2))).toEqual({ create: [], missed: [], next: at(5) });
  });

  it("reports no next run once a bounded schedule is over", () => {
    const once: Schedule = { kind: "once", runAt: at(5) };
    expect(planRuns(once, { policy: "run-once", graceMs: 0 }, T0, at(6))).toEqual({
      create: [at(5)],
      missed: [],
      next: undefined,
    });
  });

  it("runs at most the catch-up cap and records the older firings", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const p = planRuns(minutely, { policy: "catch-up", graceMs: 0 }, T0, at(300) + 1_000);
    expect(p.create).toHaveLength(CATCH_UP_CAP);
    expect(p.create[0]).toBe(at(300 - CATCH_UP_CAP + 1));
    expect(p.missed).toHaveLength(300 - CATCH_UP_CAP);
    expect(p.missed[0]?.reason).toContain("cap");
  });

  it("plans a backlog longer than one plan holds over several calls, keeping the latest for the last", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const now = at(MAX_FIRINGS_PER_PLAN + 500) + 1_000;
    const first = planRuns(minutely, { policy: "run-once", graceMs: 0 }, T0, now);
    expect(first.create).toEqual([]);
    expect(first.missed).toHaveLength(MAX_FIRINGS_PER_PLAN);
    expect(first.missed[0]?.reason).toContain("a later firing runs instead");
    expect(first.next).toBe(at(MAX_FIRINGS_PER_PLAN + 1));
    const second = planRuns(minutely, { policy: "run-once", graceMs: 0 }, at(MAX_FIRINGS_PER_PLAN), now);
    expect(second.create).toEqual([at(MAX_FIRINGS_PER_PLAN + 500)]);
    expect(second.missed).toHaveLength(499);
  });

  it("stops at the plan size without calling later on-time firings missed", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const now = at(MAX_FIRINGS_PER_PLAN);
    const p = planRuns(minutely, { policy: "skip", graceMs: 5 * MIN }, T0, now, now + 10 * MIN);
    // Firings from 5 minutes ago (10:00 + MAX - 5 min) onward are on time; the plan holds MAX.
    expect(p.create).toEqual([-5, -4, -3, -2, -1, 0].map((d) => at(MAX_FIRINGS_PER_PLAN + d)));
    expect(p.missed).toHaveLength(MAX_FIRINGS_PER_PLAN - 6);
    expect(p.next).toBe(at(MAX_FIRINGS_PER_PLAN + 1));
  });
});
