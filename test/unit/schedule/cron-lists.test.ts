import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { normalizeCron } from "../../../lambdas/core/schedule/cron";
import { previewSchedule } from "../../../lambdas/core/schedule/preview";
import { firingsAfter } from "../../../lambdas/core/schedule/schedule";

/** Vixie cron's lists: Sunday as 7, a value named twice (issue 18, acceptance 3). */
const FROM = Date.UTC(2026, 11, 1); // a Tuesday
const DAY = 86_400_000;
const NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

function weekdaysOf(cron: string, days: number): number[] {
  const seen: number[] = [];
  for (const { at } of firingsAfter({ kind: "cron", cron: normalizeCron(cron), timeZone: "UTC" }, FROM - 1)) {
    if (at >= FROM + days * DAY) break;
    seen.push(new Date(at).getUTCDay());
  }
  return seen;
}

describe("cron lists as Vixie cron reads them", () => {
  it("runs 0 0 * * SUN,7 weekly on Sundays, as 7 and SUN alone do", () => {
    const preview = previewSchedule(
      { cron: "0 0 * * SUN,7", timeZone: "UTC", from: "2026-12-01T00:00:00Z", count: "3" },
      FROM,
    );
    expect(preview.runs.map((run) => run.at)).toEqual([
      "2026-12-06T00:00:00Z",
      "2026-12-13T00:00:00Z",
      "2026-12-20T00:00:00Z",
    ]);
    expect(weekdaysOf("0 0 * * 7", 21)).toEqual([0, 0, 0]);
    expect(normalizeCron("0 0 * * SUN,7")).toBe("0 0 * * 0");
  });

  it("reads a list that names a value twice as its set, and leaves other fields as written", () => {
    expect(normalizeCron("0 9 * * 1-5,3")).toBe("0 9 * * 1,2,3,4,5");
    expect(normalizeCron("0,0 9 * * *")).toBe("0 9 * * *");
    expect(normalizeCron("0 9 * JAN,1,FEB *")).toBe("0 9 * 1,2 *");
    expect(normalizeCron("0 9 * * 5L,FRI")).toBe("0 9 * * 5,5L");
    expect(normalizeCron("0 9 * * MON-FRI")).toBe("0 9 * * MON-FRI");
  });

  it("runs on exactly the weekdays a list names, however it names them (property)", () => {
    const item = fc.oneof(
      fc.integer({ min: 0, max: 7 }).map(String),
      fc.integer({ min: 0, max: 6 }).map((day) => NAMES[day] ?? "SUN"),
      fc
        .tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 6 }))
        .map(
          ([a, b]) =>
            `${Math.min(a, b)}-${Math.max(a, b) === 6 && Math.min(a, b) === 0 ? 7 : Math.max(a, b)}`,
        ),
    );
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 6 }), (items) => {
        const expected = new Set<number>();
        for (const it of items) {
          const range = /^(\d)-(\d)$/.exec(it);
          if (range) {
            for (let d = Number(range[1]); d <= Number(range[2]); d++) expected.add(d % 7);
          } else {
            const named = NAMES.indexOf(it);
            expected.add(named >= 0 ? named : Number(it) % 7);
          }
        }
        const seen = new Set(weekdaysOf(`0 12 * * ${items.join(",")}`, 14));
        expect([...seen].sort()).toEqual([...expected].sort());
      }),
      { numRuns: 200 },
    );
  });
});
