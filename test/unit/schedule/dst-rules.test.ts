import type { DstPolicy } from "@jobsched/contract";
import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { normalizeCron } from "../../../lambdas/core/schedule/cron";
import { firingsAfter, type Schedule } from "../../../lambdas/core/schedule/schedule";

/**
 * The DST rule, zone by zone, across the 2026 and 2027 transitions. Expected instants are
 * worked out by hand from each zone's published rules, not produced by the code under test.
 */
function next(cron: string, timeZone: string, after: string, count: number, dstPolicy?: DstPolicy) {
  const schedule: Schedule = {
    kind: "cron",
    cron: normalizeCron(cron),
    timeZone,
    ...(dstPolicy ? { dstPolicy } : {}),
  };
  const out: Array<{ at: string; dst?: string; nominal?: number; skipped?: number }> = [];
  for (const f of firingsAfter(schedule, Date.parse(after) - 1)) {
    if (out.length === count) break;
    const at = new Date(f.at).toISOString().replace(".000", "");
    out.push(
      f.dst
        ? {
            at,
            dst: f.dst.nominal.length > 1 ? "merged" : f.dst.kind,
            nominal: f.dst.nominal.length,
            ...(f.dst.skipped ? { skipped: f.dst.skipped.length } : {}),
          }
        : { at },
    );
  }
  return out;
}

describe("Europe/London (01:00 GMT -> 02:00 BST on the last Sunday of March, back at 02:00 BST in October)", () => {
  it("runs a skipped 01:30 at the first instant after the gap, 02:00 BST = 01:00Z", () => {
    expect(next("30 1 * * *", "Europe/London", "2026-03-28T00:00:00Z", 3)).toEqual([
      { at: "2026-03-28T01:30:00Z" },
      { at: "2026-03-29T01:00:00Z", dst: "moved", nominal: 1 },
      { at: "2026-03-30T00:30:00Z" },
    ]);
  });

  it("corrects cron-parser, whose own zone handling runs the skipped 01:30 an hour late", () => {
    const theirs = CronExpressionParser.parse("30 1 * * *", {
      tz: "Europe/London",
      currentDate: new Date("2026-03-29T00:00:00Z"),
    });
    expect(theirs.next().toDate().toISOString()).toBe("2026-03-29T01:30:00.000Z"); // 02:30 BST
    expect(next("30 1 * * *", "Europe/London", "2026-03-29T00:00:00Z", 1)[0]?.at).toBe(
      "2026-03-29T01:00:00Z",
    );
  });

  it("runs a repeated 01:00 once, at its first occurrence (00:00Z), on 2026-10-25", () => {
    expect(next("0 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 3)).toEqual([
      { at: "2026-10-25T00:00:00Z", dst: "repeated", nominal: 1 },
      { at: "2026-10-26T01:00:00Z" },
      { at: "2026-10-27T01:00:00Z" },
    ]);
  });

  it("runs every half hour of the repeated hour once, then carries on after it", () => {
    expect(next("*/30 * * * *", "Europe/London", "2026-10-25T00:00:00Z", 4).map((f) => f.at)).toEqual([
      "2026-10-25T00:00:00Z",
      "2026-10-25T00:30:00Z",
      "2026-10-25T02:00:00Z",
      "2026-10-25T02:30:00Z",
    ]);
  });

  it("runs 01:00, 01:30 and 02:00 once together when the gap sends all three to 01:00Z", () => {
    expect(next("0,30 1,2 * * *", "Europe/London", "2026-03-29T00:00:00Z", 2)).toEqual([
      { at: "2026-03-29T01:00:00Z", dst: "merged", nominal: 3 },
      { at: "2026-03-29T01:30:00Z" },
    ]);
  });

  it("does the same in 2027 (28 March, 31 October)", () => {
    expect(next("30 1 * * *", "Europe/London", "2027-03-28T00:00:00Z", 1)).toEqual([
      { at: "2027-03-28T01:00:00Z", dst: "moved", nominal: 1 },
    ]);
    expect(next("30 1 * * *", "Europe/London", "2027-10-31T00:00:00Z", 2).map((f) => f.at)).toEqual([
      "2027-10-31T00:30:00Z",
      "2027-11-01T01:30:00Z",
    ]);
  });
});

describe("America/New_York (02:00 EST -> 03:00 EDT on the second Sunday of March, back on the first of November)", () => {
  it("moves 02:30 on 2026-03-08 to 03:00 EDT = 07:00Z", () => {
    expect(next("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 3)).toEqual([
      { at: "2026-03-08T07:00:00Z", dst: "moved", nominal: 1 },
      { at: "2026-03-09T06:30:00Z" },
      { at: "2026-03-10T06:30:00Z" },
    ]);
  });

  it("runs 01:30 once on 2026-11-01, at 01:30 EDT = 05:30Z", () => {
    expect(next("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2).map((f) => f.at)).toEqual([
      "2026-11-01T05:30:00Z",
      "2026-11-02T06:30:00Z",
    ]);
  });

  it("handles 2027 (14 March, 7 November)", () => {
    expect(next("30 2 * * *", "America/New_York", "2027-03-14T00:00:00Z", 1)[0]?.at).toBe(
      "2027-03-14T07:00:00Z",
    );
    expect(next("30 1 * * *", "America/New_York", "2027-11-07T00:00:00Z", 1)[0]?.at).toBe(
      "2027-11-07T05:30:00Z",
    );
  });
});

describe("Australia/Sydney (southern hemisphere: back on the first Sunday of April, forward on the first of October)", () => {
  it("runs 02:30 once on 2026-04-05, at its first occurrence 02:30 AEDT = 15:30Z the day before", () => {
    expect(next("30 2 * * *", "Australia/Sydney", "2026-04-04T00:00:00Z", 2)).toEqual([
      { at: "2026-04-04T15:30:00Z", dst: "repeated", nominal: 1 },
      { at: "2026-04-05T16:30:00Z" },
    ]);
  });

  it("moves 02:30 on 2026-10-04 to 03:00 AEDT = 16:00Z", () => {
    expect(next("30 2 * * *", "Australia/Sydney", "2026-10-03T00:00:00Z", 2)).toEqual([
      { at: "2026-10-03T16:00:00Z", dst: "moved", nominal: 1 },
      { at: "2026-10-04T15:30:00Z" },
    ]);
  });

  it("handles 2027 (4 April, 3 October)", () => {
    expect(next("30 2 * * *", "Australia/Sydney", "2027-04-03T00:00:00Z", 1)[0]?.at).toBe(
      "2027-04-03T15:30:00Z",
    );
    expect(next("30 2 * * *", "Australia/Sydney", "2027-10-02T00:00:00Z", 1)[0]?.at).toBe(
      "2027-10-02T16:00:00Z",
    );
  });
});

describe("Pacific/Chatham (+12:45 / +13:45, changing at 02:45 standard time)", () => {
  it("moves 03:00 on 2026-09-27 to 03:45 CHADT = 14:00Z the day before", () => {
    expect(next("0 3 * * *", "Pacific/Chatham", "2026-09-26T00:00:00Z", 2)).toEqual([
      { at: "2026-09-26T14:00:00Z", dst: "moved", nominal: 1 },
      { at: "2026-09-27T13:15:00Z" },
    ]);
  });

  it("runs 03:00 once on 2026-04-05, at 03:00 CHADT = 13:15Z the day before", () => {
    expect(next("0 3 * * *", "Pacific/Chatham", "2026-04-04T00:00:00Z", 2).map((f) => f.at)).toEqual([
      "2026-04-04T13:15:00Z",
      "2026-04-05T14:15:00Z",
    ]);
  });

  it("handles 2027 (4 April, 26 September)", () => {
    expect(next("0 3 * * *", "Pacific/Chatham", "2027-09-25T00:00:00Z", 1)[0]).toMatchObject({
      at: "2027-09-25T14:00:00Z",
      dst: "moved",
    });
    expect(next("0 3 * * *", "Pacific/Chatham", "2027-04-03T00:00:00Z", 1)[0]?.at).toBe(
      "2027-04-03T13:15:00Z",
    );
  });
});

describe("zones without DST", () => {
  it("Asia/Kolkata (+05:30 all year) runs at the same UTC time every day", () => {
    const march = next("30 9 * * *", "Asia/Kolkata", "2026-03-28T00:00:00Z", 3);
    const october = next("30 9 * * *", "Asia/Kolkata", "2026-10-24T00:00:00Z", 3);
    expect([...march, ...october].map((f) => f.at.slice(11))).toEqual(Array(6).fill("04:00:00Z"));
    expect([...march, ...october].every((f) => f.dst === undefined)).toBe(true);
  });

  it("America/Sao_Paulo (DST abolished in 2019) no longer moves in 2026 or 2027", () => {
    // Brazil used to spring forward on the first Sunday of November; now it is -03:00 all year.
    const november = next("30 0 * * *", "America/Sao_Paulo", "2026-10-31T00:00:00Z", 3);
    expect(november.map((f) => f.at)).toEqual([
      "2026-10-31T03:30:00Z",
      "2026-11-01T03:30:00Z",
      "2026-11-02T03:30:00Z",
    ]);
    expect(next("30 0 * * *", "America/Sao_Paulo", "2027-11-06T00:00:00Z", 2).every((f) => !f.dst)).toBe(
      true,
    );
  });

  it("America/Sao_Paulo still follows its old rule for a date when it had DST (2018-11-04, 00:00 -> 01:00)", () => {
    expect(next("30 0 * * *", "America/Sao_Paulo", "2018-11-03T12:00:00Z", 2)).toEqual([
      { at: "2018-11-04T03:00:00Z", dst: "moved", nominal: 1 },
      { at: "2018-11-05T02:30:00Z" },
    ]);
  });
});

describe("day-of-month and day-of-week", () => {
  it("runs on a day matching either when both are restricted (classic cron)", () => {
    // The 13th, or any Friday: January 2026 has Fridays on the 2nd, 9th, 16th...
    expect(next("0 0 13 * FRI", "UTC", "2026-01-01T00:00:00Z", 4).map((f) => f.at.slice(0, 10))).toEqual([
      "2026-01-02",
      "2026-01-09",
      "2026-01-13",
      "2026-01-16",
    ]);
  });
});

describe("the other DST policies, Europe/London 2026 (worked by hand)", () => {
  it("every-occurrence runs a repeated 01:30 in both passes: 00:30Z (BST) and 01:30Z (GMT)", () => {
    expect(next("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 3, "every-occurrence")).toEqual([
      { at: "2026-10-25T00:30:00Z", dst: "repeated", nominal: 1 },
      { at: "2026-10-25T01:30:00Z", dst: "second-occurrence", nominal: 1 },
      { at: "2026-10-26T01:30:00Z" },
    ]);
  });

  it("every-occurrence interleaves two passes in time order, each half hour twice", () => {
    expect(
      next("*/30 1 * * *", "Europe/London", "2026-10-25T00:00:00Z", 5, "every-occurrence").map((f) => [
        f.at,
        f.dst,
      ]),
    ).toEqual([
      ["2026-10-25T00:00:00Z", "repeated"], // 01:00 BST
      ["2026-10-25T00:30:00Z", "repeated"], // 01:30 BST
      ["2026-10-25T01:00:00Z", "second-occurrence"], // 01:00 GMT
      ["2026-10-25T01:30:00Z", "second-occurrence"], // 01:30 GMT
      ["2026-10-26T01:00:00Z", undefined],
    ]);
  });

  it("every-occurrence runs a skipped time at the end of the gap, as the default does", () => {
    expect(next("30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 1, "every-occurrence")).toEqual([
      { at: "2026-03-29T01:00:00Z", dst: "moved", nominal: 1 },
    ]);
  });

  it("skip-gap does not run a skipped 01:30 and marks the next run with it", () => {
    expect(next("30 1 * * *", "Europe/London", "2026-03-28T00:00:00Z", 2, "skip-gap")).toEqual([
      { at: "2026-03-28T01:30:00Z" },
      { at: "2026-03-30T00:30:00Z", dst: "exact", nominal: 1, skipped: 1 },
    ]);
  });

  it("skip-gap keeps a 02:00 that exists (the first instant after the gap) and runs a repeated time once", () => {
    expect(
      next("0 1,2 * * *", "Europe/London", "2026-03-29T00:00:00Z", 1, "skip-gap").map((f) => [
        f.at,
        f.skipped,
      ]),
    ).toEqual([["2026-03-29T01:00:00Z", 1]]); // 02:00 BST; 01:00 GMT skipped
    expect(next("0 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2, "skip-gap")).toEqual([
      { at: "2026-10-25T00:00:00Z", dst: "repeated", nominal: 1 },
      { at: "2026-10-26T01:00:00Z" },
    ]);
  });
});
