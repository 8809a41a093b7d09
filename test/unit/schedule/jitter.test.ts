import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countFirings } from "../../../lambdas/core/schedule/count";
import { jitterOffsetMs } from "../../../lambdas/core/schedule/jitter";
import { firingsAfter, firstRunAt, type Schedule } from "../../../lambdas/core/schedule/schedule";
import { scheduleFromFields } from "../../../lambdas/core/schedule/schedule-input";

/**
 * Jitter windows, property-based: the jittered runs of random cron and interval schedules,
 * compared with the same schedule's firings without jitter (which cron-properties.test.ts
 * checks against a brute-force oracle).
 */
const MINUTE = 60_000;
const ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"];
const CRONS = ["* * * * *", "*/15 * * * *", "0 * * * *", "30 1 * * *", "0 9 * * MON-FRI", "0,1 0 * * *"];

const plainArb: fc.Arbitrary<Schedule> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...CRONS),
      fc.constantFrom(...ZONES),
      fc.constantFrom("first-occurrence", "every-occurrence", "skip-gap" as const),
    )
    .map(([cron, timeZone, dstPolicy]): Schedule => ({ kind: "cron", cron, timeZone, dstPolicy })),
  fc
    .tuple(fc.integer({ min: 1, max: 24 * 60 }), fc.integer({ min: 0, max: 3_600_000 }))
    .map(([minutes, anchor]): Schedule => ({ kind: "interval", everyMs: minutes * MINUTE, anchor })),
);
const windowArb = fc.integer({ min: 1, max: 24 * 3600 }).map((s) => s * 1000);
const seedArb = fc.stringMatching(/^j_[0-9a-z]{20}$/);
const instantArb = fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 11, 31) });

function take(schedule: Schedule, after: number, count: number) {
  const out = [];
  for (const firing of firingsAfter(schedule, after)) {
    out.push(firing);
    if (out.length === count) break;
  }
  return out;
}

describe("jitter", () => {
  it("never reorders a job's runs or moves one past the next firing; offsets are whole seconds inside the window", () => {
    fc.assert(
      fc.property(plainArb, windowArb, seedArb, instantArb, (plain, windowMs, seed, after) => {
        const jittered: Schedule = { ...plain, jitter: { windowMs, seed } };
        // Every firing from a window before `after` to past the 30th run's (firings are a minute apart at least).
        const firings = take(plain, after - windowMs, 32 + Math.ceil(windowMs / MINUTE)).map((f) => f.at);
        const runs = take(jittered, after, 30);
        let previous = after;
        for (const run of runs) {
          const firingAt = run.jittered?.firingAt as number;
          const index = firings.indexOf(firingAt);
          expect(index).toBeGreaterThanOrEqual(0); // stands for a real firing
          const next = firings[index + 1] as number;
          expect(run.at).toBeGreaterThan(previous); // in order, one per instant
          expect(run.at).toBeGreaterThanOrEqual(firingAt);
          expect(run.at).toBeLessThan(next); // before the next firing
          expect(run.at - firingAt).toBeLessThan(windowMs);
          expect((run.at - firingAt) % 1000).toBe(0);
          previous = run.at;
        }
        // No firing is lost: every firing after the first run's is some run's.
        const first = runs[0]?.jittered?.firingAt as number;
        const covered = firings.filter((at) => at >= first).slice(0, runs.length);
        expect(runs.map((r) => r.jittered?.firingAt)).toEqual(covered);
      }),
      { numRuns: 100 },
    );
  });

  it("is stable: the same job and firing get the same offset, from whatever instant the walk starts", () => {
    fc.assert(
      fc.property(
        plainArb,
        windowArb,
        seedArb,
        instantArb,
        fc.integer({ min: 0, max: 6 * 3_600_000 }),
        (plain, windowMs, seed, after, later) => {
          const schedule: Schedule = { ...plain, jitter: { windowMs, seed } };
          const fromEarlier = take(schedule, after, 40);
          const fromLater = take(schedule, after + later, 10);
          const cut = fromEarlier.filter((f) => f.at > after + later).slice(0, fromLater.length);
          fc.pre(cut.length === fromLater.length);
          expect(fromLater).toEqual(cut);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("spreads one firing of many jobs over the window (different job ids, different offsets)", () => {
    const windowMs = 300_000;
    const offsets = Array.from({ length: 1_000 }, (_, i) =>
      jitterOffsetMs({ windowMs, seed: `j_${String(i).padStart(20, "0")}` }, Date.UTC(2026, 0, 1), undefined),
    );
    const perMinute = [0, 1, 2, 3, 4].map((m) => offsets.filter((o) => Math.floor(o / 60_000) === m).length);
    // 1,000 uniform draws: about 200 a minute; 150 is more than six standard deviations below.
    for (const count of perMinute) expect(count).toBeGreaterThan(150);
  });

  it("counts jittered runs as walking them does (missed-run summaries)", () => {
    fc.assert(
      fc.property(
        plainArb,
        windowArb,
        seedArb,
        instantArb,
        fc.integer({ min: 0, max: 3 * 86_400_000 }),
        (plain, windowMs, seed, after, length) => {
          const schedule: Schedule = { ...plain, jitter: { windowMs, seed } };
          let walked = 0;
          for (const { at } of firingsAfter(schedule, after)) {
            if (at >= after + length) break;
            walked += 1;
          }
          expect(countFirings(schedule, after, after + length)).toBe(walked);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("jitters a one-off run inside its window, and its first run is that instant", () => {
    const runAt = Date.UTC(2026, 10, 2, 9);
    const schedule = scheduleFromFields({
      runAt: "2026-11-02T09:00:00Z",
      jitter: "PT10M",
      jitterSeed: "j_0000000000000000000a",
    });
    const [run] = take(schedule, runAt - 1, 2);
    expect(run?.jittered?.firingAt).toBe(runAt);
    expect(run?.at).toBeGreaterThanOrEqual(runAt);
    expect(run?.at).toBeLessThan(runAt + 600_000);
    expect(firstRunAt(schedule, runAt - 1)).toBe(run?.at);
    expect(take(schedule, run?.at as number, 1)).toEqual([]);
  });

  it("has no room to move a firing whose next one is less than a second away", () => {
    const jitter = { windowMs: 60_000, seed: "j_0000000000000000000a" };
    expect(jitterOffsetMs(jitter, 1_000, 1_999)).toBe(0);
    expect(jitterOffsetMs(jitter, 1_000, 2_000)).toBe(0); // one second: the only offset is 0
  });

  it.each([
    [{ cron: "0 9 * * *", jitter: "P2D", jitterSeed: "j" }, "jitter"],
    [{ cron: "0 9 * * *", jitter: "soon", jitterSeed: "j" }, "jitter"],
    [{ cron: "0 9 * * *", jitter: "PT0S", jitterSeed: "j" }, "jitter"],
    [{ cron: "0 9 * * *", jitter: "PT5M" }, "jobId"],
  ])("refuses %j naming %s", (fields, field) => {
    expect(() => scheduleFromFields(fields)).toThrow(expect.objectContaining({ field }));
  });
});
