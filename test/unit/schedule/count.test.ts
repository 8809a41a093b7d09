import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countFirings } from "../../../lambdas/core/schedule/count";
import { firingsAfter, type Schedule } from "../../../lambdas/core/schedule/schedule";

/**
 * countFirings against walking the firings one by one (firingsAfter, itself checked against a
 * brute-force oracle in cron-properties.test.ts), over random expressions, DST zones, ranges
 * and bounds.
 */
const DAY = 86_400_000;
const ZONES = [
  "UTC",
  "Europe/London",
  "America/New_York",
  "America/Santiago",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "Asia/Tehran",
  "Africa/Casablanca",
];
const EXPRESSIONS = [
  "* * * * *",
  "*/7 1-3 * * *",
  "30 2 * * *",
  "0,30 0 * * *",
  "0 0 L * *",
  "15 3 1,15 * MON",
  "0 */2 * * 1-5",
  "45 23 * 3,10 SUN",
  "0 1 1-7 * MON",
  "5 4 * * 5#2",
];

function walked(schedule: Schedule, after: number, before: number): number {
  let count = 0;
  for (const { at } of firingsAfter(schedule, after)) {
    if (at >= before) break;
    count += 1;
  }
  return count;
}

const from2026 = Date.UTC(2026, 0, 1);

describe("countFirings", () => {
  it("agrees with walking the firings, for cron schedules across DST changes, under each DST policy", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...EXPRESSIONS),
        fc.constantFrom(...ZONES),
        fc.integer({ min: 0, max: 700 * DAY }),
        fc.integer({ min: 0, max: 12 * DAY }),
        fc.constantFrom("first-occurrence", "every-occurrence", "skip-gap" as const),
        (cron, timeZone, start, length, dstPolicy) => {
          const schedule: Schedule = { kind: "cron", cron, timeZone, dstPolicy };
          const after = from2026 + start;
          expect(countFirings(schedule, after, after + length)).toBe(walked(schedule, after, after + length));
        },
      ),
      { numRuns: 90 },
    );
  });

  it("agrees at the very instants of DST changes and of firings (the ends are exclusive)", () => {
    const schedule: Schedule = { kind: "cron", cron: "30 1-3 * * *", timeZone: "Europe/London" };
    const spring = Date.UTC(2026, 2, 29, 1, 0, 0); // 01:00 GMT becomes 02:00 BST
    for (const after of [spring - 1, spring, spring - 30 * 60_000, spring + 30 * 60_000]) {
      for (const days of [1, 2, 3]) {
        expect(countFirings(schedule, after, after + days * DAY)).toBe(
          walked(schedule, after, after + days * DAY),
        );
      }
    }
  });

  it("honours a cron schedule's startAt and endAt", () => {
    const schedule: Schedule = {
      kind: "cron",
      cron: "0 * * * *",
      timeZone: "America/New_York",
      startAt: from2026 + 3 * DAY,
      endAt: from2026 + 40 * DAY,
    };
    expect(countFirings(schedule, from2026, from2026 + 60 * DAY)).toBe(
      walked(schedule, from2026, from2026 + 60 * DAY),
    );
    expect(countFirings(schedule, from2026, from2026 + 60 * DAY)).toBe(37 * 24 + 1);
  });

  it("counts interval schedules by arithmetic, within their bounds", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 7 * DAY }),
        fc.integer({ min: -DAY, max: DAY }),
        fc.option(fc.integer({ min: 0, max: 30 * DAY })),
        fc.integer({ min: 0, max: 20 * DAY }),
        fc.integer({ min: 0, max: 10 * DAY }),
        (everyMs, anchorShift, end, start, length) => {
          const schedule: Schedule = {
            kind: "interval",
            everyMs,
            anchor: from2026 + anchorShift,
            startAt: from2026 + anchorShift,
            ...(end === null ? {} : { endAt: from2026 + end }),
          };
          const after = from2026 + start;
          const before = after + length;
          // Walking a one-second interval over ten days is 864,000 steps: keep the oracle affordable.
          fc.pre(length / everyMs < 200_000);
          expect(countFirings(schedule, after, before)).toBe(walked(schedule, after, before));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("counts a one-off firing only strictly inside the range", () => {
    const once: Schedule = { kind: "once", runAt: from2026 };
    expect(countFirings(once, from2026 - 1, from2026 + 1)).toBe(1);
    expect(countFirings(once, from2026, from2026 + 1)).toBe(0);
    expect(countFirings(once, from2026 - 1, from2026)).toBe(0);
    expect(countFirings(once, from2026, from2026)).toBe(0);
  });

  it("counts a minute job's year of firings without walking it", () => {
    const schedule: Schedule = { kind: "cron", cron: "* * * * *", timeZone: "Europe/Berlin" };
    // 365 days of 1,440 minutes; Berlin's changes move no minute-of-day in or out (each
    // skipped minute is merged into 03:00, a real minute; each repeated one runs once).
    const count = countFirings(schedule, Date.UTC(2026, 0, 1) - 1, Date.UTC(2027, 0, 1) - 1);
    expect(count).toBe(365 * 1_440 - 60);
  });
});
