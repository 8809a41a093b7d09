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

  it("lists a backlog of up to the catch-up cap firing by firing", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const p = planRuns(minutely, { policy: "run-once", graceMs: 0 }, T0, at(CATCH_UP_CAP) + 1_000);
    expect(p.create).toEqual([at(CATCH_UP_CAP)]);
    expect(p.missed).toHaveLength(CATCH_UP_CAP - 1);
    expect(p.missed.every((m) => m.summary === undefined)).toBe(true);
  });

  it("runs at most the catch-up cap and records the older firings as one summary", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const p = planRuns(minutely, { policy: "catch-up", graceMs: 0 }, T0, at(300) + 1_000);
    expect(p.create).toHaveLength(CATCH_UP_CAP);
    expect(p.create[0]).toBe(at(300 - CATCH_UP_CAP + 1));
    expect(p.missed).toEqual([
      {
        scheduledFor: at(1),
        summary: { through: at(300 - CATCH_UP_CAP), count: 300 - CATCH_UP_CAP },
        reason: expect.stringContaining("cap"),
      },
    ]);
  });

  it.each([
    ["run-once", [at(43_200)], 43_199, at(43_199)],
    ["skip", [], 43_200, at(43_200)],
  ] as const)(
    "%s: a 30-day backlog of a minute job is one plan: what runs, and one summary",
    (policy, create, count, through) => {
      const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
      const now = at(43_200) + 1_000;
      const p = planRuns(minutely, { policy, graceMs: 0 }, T0, now, now + 2 * MIN);
      expect(p.create).toEqual([...create, at(43_201), at(43_202)]);
      expect(p.missed).toEqual([
        { scheduledFor: at(1), reason: expect.stringContaining(policy), summary: { through, count } },
      ]);
      expect(p.next).toBe(at(43_203));
    },
  );

  it("gives a long backlog's summary the reasons that apply: maxLateness, the policy, or both", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const now = at(1_000) + 1_000;
    const plan = (maxLatenessMs: number) =>
      planRuns(minutely, { policy: "run-once", graceMs: 0, maxLatenessMs }, T0, now);
    // Every summarised firing is more than 10 s late; the latest runs (it is 1 s late).
    expect(plan(10_000).missed).toEqual([
      {
        scheduledFor: at(1),
        reason: "more than maxLateness (10 s) late",
        summary: { through: at(999), count: 999 },
      },
    ]);
    // The older ones are more than 30 minutes late; the newer ones are not run under run-once.
    const both = plan(30 * MIN).missed[0]?.reason;
    expect(both).toContain("maxLateness (1800 s)");
    expect(both).toContain("run-once");
    expect(plan(30 * MIN).create).toEqual([at(1_000)]);
    // None of them is 100 days late.
    expect(plan(100 * 24 * 60 * MIN).missed[0]?.reason).not.toContain("maxLateness");
  });

  it("plans a long backlog whose every overdue firing is past maxLateness: one summary, the on-time one runs", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const now = at(1_000) + 1_000;
    const p = planRuns(minutely, { policy: "run-once", graceMs: 60_000, maxLatenessMs: 30_000 }, T0, now);
    expect(p.create).toEqual([at(1_000)]);
    expect(p.missed).toEqual([
      {
        scheduledFor: at(1),
        reason: "more than maxLateness (30 s) late",
        summary: { through: at(998), count: 998 },
      },
      { scheduledFor: at(999), reason: "more than maxLateness (30 s) late" },
    ]);
  });

  it("plans a long backlog with later on-time firings in one call, none of them called missed", () => {
    const minutely: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "UTC" };
    const now = at(MAX_FIRINGS_PER_PLAN);
    const p = planRuns(minutely, { policy: "skip", graceMs: 5 * MIN }, T0, now, now + 10 * MIN);
    // Firings from 5 minutes ago (10:00 + MAX - 5 min) onward are on time.
    expect(p.create).toEqual(Array.from({ length: 15 }, (_, i) => at(MAX_FIRINGS_PER_PLAN - 5 + i)));
    expect(p.missed).toMatchObject([{ summary: { count: MAX_FIRINGS_PER_PLAN - 6 } }]);
    expect(p.next).toBe(at(MAX_FIRINGS_PER_PLAN + 10));
  });
});
