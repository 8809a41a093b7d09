import type { DstPolicy } from "@jobsched/contract";
import { CronExpressionParser } from "cron-parser";
import fc from "fast-check";
import { IANAZone } from "luxon";
import { describe, expect, it } from "vitest";
import { normalizeCron } from "../../../lambdas/core/schedule/cron";
import { firingsAfter } from "../../../lambdas/core/schedule/schedule";

/**
 * Properties of cron schedules over random expressions, zones and instants, and an
 * independent brute-force oracle that walks every minute: the expected firings are the
 * minutes whose local wall time matches and occurs there for the first time, plus each
 * spring-forward jump whose skipped local times held a match.
 */
const MINUTE = 60_000;
const ZONES = [
  "UTC",
  "Europe/London",
  "Europe/Berlin",
  "America/New_York",
  "America/St_Johns",
  "America/Santiago",
  "America/Sao_Paulo",
  "Australia/Sydney",
  "Australia/Lord_Howe",
  "Pacific/Auckland",
  "Pacific/Chatham",
  "Asia/Kolkata",
  "Asia/Tehran",
  "Africa/Casablanca",
];

const offset = (zone: IANAZone, at: number) => zone.offset(at) * MINUTE;

/** Does a local wall time (read as UTC) match the expression? cron-parser is the judge. */
function matcher(fields: string): (local: number) => boolean {
  const expression = CronExpressionParser.parse(fields, { tz: "UTC" });
  return (local) => expression.includesDate(new Date(local));
}
const naive = (zone: IANAZone, at: number) => at + offset(zone, at);

/** Is `at` the first instant whose local time is naive(at)? Checks every offset within 3 h. */
function isFirstOccurrence(zone: IANAZone, at: number): boolean {
  const local = naive(zone, at);
  if (offset(zone, at - 3 * 3_600_000) === offset(zone, at)) return true; // no clock change lately
  for (let earlier = at - 3 * 3_600_000; earlier < at; earlier += 15 * MINUTE) {
    const candidate = local - offset(zone, earlier);
    if (candidate < at && naive(zone, candidate) === local) return false;
  }
  return true;
}

/** If the clocks jump forward at `at`, the local minutes they skip; otherwise none. */
function skippedLocalMinutes(zone: IANAZone, at: number): number[] {
  const before = offset(zone, at - 1);
  const after = offset(zone, at);
  if (after <= before) return [];
  const minutes: number[] = [];
  for (let local = at + before; local < at + after; local += MINUTE) minutes.push(local);
  return minutes;
}

/**
 * The policies, minute by minute: first-occurrence runs a matching local time where it occurs
 * first, and a jump forward whose skipped minutes held a match; every-occurrence runs it
 * wherever it occurs, and such jumps; skip-gap runs it where it occurs first, and no jump.
 */
function oracle(
  fields: string,
  zone: IANAZone,
  from: number,
  to: number,
  policy: DstPolicy = "first-occurrence",
): number[] {
  const matches = matcher(fields);
  const expected: number[] = [];
  for (let at = Math.floor(from / MINUTE) * MINUTE + MINUTE; at <= to; at += MINUTE) {
    const matchesHere = matches(naive(zone, at));
    const local = matchesHere && (policy === "every-occurrence" || isFirstOccurrence(zone, at));
    const gapHeldMatch = policy !== "skip-gap" && skippedLocalMinutes(zone, at).some(matches);
    if (local || gapHeldMatch) expected.push(at);
  }
  return expected;
}

const POLICIES: readonly DstPolicy[] = ["first-occurrence", "every-occurrence", "skip-gap"];

function take(
  fields: string,
  timeZone: string,
  after: number,
  count: number,
  until = Number.POSITIVE_INFINITY,
  dstPolicy: DstPolicy = "first-occurrence",
) {
  const out: number[] = [];
  for (const f of firingsAfter({ kind: "cron", cron: fields, timeZone, dstPolicy }, after)) {
    if (f.at > until) break;
    out.push(f.at);
    if (out.length === count) break;
  }
  return out;
}

const field = (max: number, min = 0) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant("*") },
    fc.integer({ min, max }).map(String),
    fc.integer({ min: 2, max: Math.max(2, Math.floor((max - min) / 2)) }).map((k) => `*/${k}`),
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min, max }))
      .map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: 4 }).map((xs) => xs.join(",")),
  );

const cronArb = fc
  .tuple(
    field(59),
    field(23),
    fc.oneof({ weight: 4, arbitrary: fc.constant("*") }, field(28, 1)),
    field(12, 1),
    field(6),
  )
  .map((parts) => parts.join(" "));

const instantArb = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2037, 11, 31) });

describe("cron firings, property-based", () => {
  it("strictly increase, never share an instant, and each matches local wall time or ends a gap that hid a match", () => {
    fc.assert(
      fc.property(cronArb, fc.constantFrom(...ZONES), instantArb, (expression, timeZone, after) => {
        const fields = normalizeCron(expression);
        const zone = IANAZone.create(timeZone);
        const matches = matcher(fields);
        const firings = take(fields, timeZone, after, 20);
        expect(firings.length).toBeGreaterThan(0);
        let previous = after;
        for (const at of firings) {
          expect(at).toBeGreaterThan(previous);
          previous = at;
          const onLocalTime = matches(naive(zone, at)) && isFirstOccurrence(zone, at);
          const endsGap = skippedLocalMinutes(zone, at).some(matches);
          expect(onLocalTime || endsGap, `${expression} in ${timeZone}: ${new Date(at).toISOString()}`).toBe(
            true,
          );
        }
      }),
      { numRuns: 120 },
    );
  });

  it("agree minute by minute with a brute-force oracle over short windows, under each DST policy", () => {
    fc.assert(
      fc.property(
        cronArb,
        fc.constantFrom(...ZONES),
        instantArb,
        fc.constantFrom(...POLICIES),
        (expression, timeZone, after, policy) => {
          const fields = normalizeCron(expression);
          const firings = take(fields, timeZone, after, 30, undefined, policy);
          const last = firings.at(-1) ?? after;
          fc.pre(last - after <= 86_400_000); // the oracle walks every minute: keep windows short
          expect(firings).toEqual(oracle(fields, IANAZone.create(timeZone), after, last, policy));
        },
      ),
      { numRuns: 90 },
    );
  });

  it.each(POLICIES)(
    "agree with the oracle across every 2026 and 2027 transition of the DST zones (%s)",
    (policy) => {
      const crons = ["*/15 * * * *", "30 1,2,3 * * *", "0,30 0-4 * * *"];
      let transitionsSeen = 0;
      for (const timeZone of ZONES) {
        const zone = IANAZone.create(timeZone);
        // Find the transitions: step through the two years a day at a time, then an hour at a time.
        const transitions: number[] = [];
        for (let day = Date.UTC(2026, 0, 1); day < Date.UTC(2028, 0, 1); day += 86_400_000) {
          if (offset(zone, day) === offset(zone, day + 86_400_000)) continue;
          for (let t = day; t < day + 86_400_000; t += 3_600_000) {
            if (offset(zone, t) !== offset(zone, t + 3_600_000)) transitions.push(t);
          }
        }
        transitionsSeen += transitions.length;
        for (const t of transitions) {
          for (const cron of crons) {
            const from = t - 3 * 3_600_000;
            const to = t + 4 * 3_600_000;
            const got = take(cron, timeZone, from, 500, to, policy);
            expect(got, `${cron} in ${timeZone} near ${new Date(t).toISOString()} (${policy})`).toEqual(
              oracle(cron, zone, from, to, policy),
            );
          }
        }
      }
      // 12 zones with DST, two transitions a year each (Casablanca's Ramadan moves: four).
      expect(transitionsSeen).toBeGreaterThanOrEqual(40);
    },
  );
});
