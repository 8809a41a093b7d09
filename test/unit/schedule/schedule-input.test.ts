import { Duration } from "luxon";
import { describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF, retryDelayMs } from "../../../lambdas/core/backoff";
import { ValidationError } from "../../../lambdas/core/errors";
import { CronSyntaxError, normalizeCron } from "../../../lambdas/core/schedule/cron";
import { IntervalSyntaxError, nextIntervalFiring, parseEvery } from "../../../lambdas/core/schedule/interval";
import { previewSchedule } from "../../../lambdas/core/schedule/preview";
import { firstRunAt, nextFiring, nextRunAfter } from "../../../lambdas/core/schedule/schedule";
import { requireFutureRun, scheduleFromFields } from "../../../lambdas/core/schedule/schedule-input";

const T = Date.UTC(2026, 10, 2, 9, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString().replace(".000", "");

function fieldOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field;
  }
  throw new Error("expected a ValidationError");
}

describe("cron expressions", () => {
  it("expands macros and keeps five-field expressions with names, ranges, steps and lists", () => {
    expect(normalizeCron("@hourly")).toBe("0 * * * *");
    expect(normalizeCron(" @Daily ")).toBe("0 0 * * *");
    expect(normalizeCron("@weekly")).toBe("0 0 * * 0");
    expect(normalizeCron("@monthly")).toBe("0 0 1 * *");
    expect(normalizeCron("@yearly")).toBe("0 0 1 1 *");
    expect(normalizeCron("0  9 * JAN-MAR MON-FRI")).toBe("0 9 * JAN-MAR MON-FRI");
    expect(normalizeCron("*/15 8-18 1,15 * THU")).toBe("*/15 8-18 1,15 * THU");
  });

  it.each([
    ["0 0 0 * * *", /seconds/],
    ["0 0 *", /five fields/],
    ["@every_minute", /unknown macro/],
    ["61 * * * *", /61/],
    ["0 0 30 2 *", /day of month/],
    ["H * * * *", /hashed/],
    ["0 H/2 * * *", /hashed/],
  ])("refuses %s", (expression, message) => {
    expect(() => normalizeCron(expression)).toThrow(CronSyntaxError);
    expect(() => normalizeCron(expression)).toThrow(message);
  });
});

describe("intervals", () => {
  it("reads short forms and fixed-length ISO 8601 durations", () => {
    expect(parseEvery("15m")).toBe(900_000);
    expect(parseEvery("90s")).toBe(90_000);
    expect(parseEvery("2h")).toBe(7_200_000);
    expect(parseEvery("1d")).toBe(86_400_000);
    expect(parseEvery("1w")).toBe(604_800_000);
    expect(parseEvery("PT15M")).toBe(900_000);
    expect(parseEvery("P1DT12H")).toBe(129_600_000);
  });

  it.each([
    ["30s", /at least one minute/],
    ["P1M", /months/],
    ["P400D", /366 days/],
    ["PT90.5S", /whole number of seconds/],
    ["every so often", /neither/],
  ])("refuses %s", (text, message) => {
    expect(() => parseEvery(text)).toThrow(IntervalSyntaxError);
    expect(() => parseEvery(text)).toThrow(message);
  });

  it("fires at anchor + k x every, strictly after the given instant", () => {
    expect(nextIntervalFiring(0, 900_000, T)).toBe(T + 900_000);
    expect(nextIntervalFiring(0, 900_000, T - 1)).toBe(T);
    expect(nextIntervalFiring(T + 5, 900_000, T)).toBe(T + 5);
  });

  it("ignores DST: every 1h stays on the UTC hour across London's spring-forward", () => {
    const schedule = scheduleFromFields({ every: "1h" });
    const first = Date.UTC(2026, 2, 29, 0, 30);
    expect(nextFiring(schedule, first)?.at).toBe(Date.UTC(2026, 2, 29, 1));
    expect(nextRunAfter(schedule, Date.UTC(2026, 2, 29, 1))).toBe(Date.UTC(2026, 2, 29, 2));
  });

  it("honours startAt and endAt", () => {
    const schedule = scheduleFromFields({
      every: "15m",
      startAt: iso(T + 60_000),
      endAt: iso(T + 1_000_000),
    });
    expect(firstRunAt(schedule, T)).toBe(T + 60_000);
    expect(nextRunAfter(schedule, T + 60_000)).toBe(T + 960_000);
    expect(nextRunAfter(schedule, T + 960_000)).toBeUndefined();
  });
});

describe("schedules from request fields", () => {
  it("builds one-off, cron and interval schedules", () => {
    expect(scheduleFromFields({ runAt: "2026-11-02T10:00:00+01:00" })).toEqual({ kind: "once", runAt: T });
    expect(scheduleFromFields({ cron: "@daily", timeZone: "Europe/London" })).toEqual({
      kind: "cron",
      cron: "0 0 * * *",
      timeZone: "Europe/London",
    });
    expect(scheduleFromFields({ cron: "0 9 * * *" })).toMatchObject({ timeZone: "UTC" });
    expect(scheduleFromFields({ every: "PT15M", startAt: iso(T) })).toEqual({
      kind: "interval",
      everyMs: 900_000,
      anchor: T,
      startAt: T,
    });
  });

  it("limits a cron schedule to [startAt, endAt]", () => {
    const schedule = scheduleFromFields({
      cron: "0 * * * *",
      startAt: iso(T + 1),
      endAt: iso(T + 7_200_000),
    });
    expect(firstRunAt(schedule, T - 86_400_000)).toBe(T + 3_600_000);
    expect(nextRunAfter(schedule, T + 3_600_000)).toBe(T + 7_200_000);
    expect(nextRunAfter(schedule, T + 7_200_000)).toBeUndefined();
  });

  it.each([
    [{}, "runAt"],
    [{ runAt: iso(T), cron: "* * * * *" }, "cron"],
    [{ cron: "* * * * *", every: "5m", everyField: "interval.every" }, "interval.every"],
    [{ cron: "0 9 * * *", timeZone: "Europe/Londres" }, "timeZone"],
    [{ cron: "0 9 * *" }, "cron"],
    [{ every: "5 minutes" }, "interval"],
    [{ runAt: "tomorrow" }, "runAt"],
    [{ runAt: iso(T), timeZone: "UTC" }, "timeZone"],
    [{ runAt: iso(T), endAt: iso(T) }, "endAt"],
    [{ cron: "0 9 * * *", startAt: "soon" }, "startAt"],
    [{ cron: "0 9 * * *", startAt: iso(T), endAt: iso(T) }, "endAt"],
  ])("refuses %j naming %s", (fields, field) => {
    expect(fieldOf(() => scheduleFromFields(fields))).toBe(field);
  });

  it("refuses a schedule with no run left", () => {
    const over = scheduleFromFields({ cron: "0 9 * * *", endAt: iso(T - 86_400_000) });
    expect(fieldOf(() => requireFutureRun(over, T))).toBe("cron");
    const intervalOver = scheduleFromFields({ every: "1h", endAt: iso(T - 1) });
    expect(fieldOf(() => requireFutureRun(intervalOver, T))).toBe("endAt");
    expect(requireFutureRun(scheduleFromFields({ cron: "0 10 * * *" }), T)).toBe(T + 3_600_000);
  });
});

describe("preview", () => {
  it("lists the next runs in UTC and local time, marking the one DST moved", () => {
    const preview = previewSchedule(
      { cron: "30 1 * * *", timeZone: "Europe/London", from: "2026-03-28T00:00:00Z", count: "3" },
      0,
    );
    expect(preview).toEqual({
      timeZone: "Europe/London",
      from: "2026-03-28T00:00:00Z",
      runs: [
        { at: "2026-03-28T01:30:00Z", local: "2026-03-28T01:30:00+00:00" },
        {
          at: "2026-03-29T01:00:00Z",
          local: "2026-03-29T02:00:00+01:00",
          dst: "moved",
          scheduledLocal: ["2026-03-29T01:30:00"],
        },
        { at: "2026-03-30T00:30:00Z", local: "2026-03-30T01:30:00+01:00" },
      ],
    });
  });

  it("marks merged and repeated local times", () => {
    const merged = previewSchedule(
      { cron: "0,30 1,2 * * *", timeZone: "Europe/London", from: "2026-03-29T00:00:00Z", count: "1" },
      0,
    );
    expect(merged.runs[0]).toMatchObject({
      dst: "merged",
      scheduledLocal: ["2026-03-29T01:00:00", "2026-03-29T01:30:00", "2026-03-29T02:00:00"],
    });
    const repeated = previewSchedule(
      { cron: "0 1 * * *", timeZone: "Europe/London", from: "2026-10-25T00:00:00Z", count: "1" },
      0,
    );
    expect(repeated.runs).toEqual([
      { at: "2026-10-25T00:00:00Z", local: "2026-10-25T01:00:00+01:00", dst: "repeated" },
    ]);
  });

  it("previews intervals and one-off times, from now by default", () => {
    expect(previewSchedule({ interval: "15m", count: "2" }, T - 1).runs.map((r) => r.at)).toEqual([
      "2026-11-02T09:00:00Z",
      "2026-11-02T09:15:00Z",
    ]);
    expect(previewSchedule({ runAt: "2026-11-02T09:00:00Z" }, T).runs).toHaveLength(1);
    expect(previewSchedule({ runAt: "2026-11-02T09:00:00Z" }, T + 1).runs).toHaveLength(0);
  });

  it.each([
    [{ cron: "0 9 * *" }, "cron"],
    [{ cron: "0 9 * * *", timeZone: "Mars/Olympus" }, "timeZone"],
    [{ cron: "0 9 * * *", count: "0" }, "count"],
    [{ cron: "0 9 * * *", count: "101" }, "count"],
    [{ cron: "0 9 * * *", count: "ten" }, "count"],
    [{ cron: "0 9 * * *", from: "yesterday" }, "from"],
    [{ cron: "0 9 * * *", color: "red" }, "color"],
    [{ cron: "0 9 * * *", dstPolicy: "last-occurrence" }, "dstPolicy"],
    [{ interval: "1h", dstPolicy: "skip-gap" }, "dstPolicy"],
    [{ runAt: "2026-11-02T09:00:00Z", dstPolicy: "skip-gap" }, "dstPolicy"],
    [{ cron: "0 9 * * *", jitter: "PT5M" }, "jobId"],
    [{ cron: "0 9 * * *", jitter: "300", jobId: "j_0123456789abcdefghjk" }, "jitter"],
  ])("answers %j with a 400 naming %s", (query, field) => {
    expect(fieldOf(() => previewSchedule(query, T))).toBe(field);
  });

  it("marks each DST policy's runs: second occurrences, and skipped local times", () => {
    const fallBack = {
      cron: "30 1 * * *",
      timeZone: "Europe/London",
      from: "2026-10-24T12:00:00Z",
      count: "2",
    };
    expect(previewSchedule({ ...fallBack, dstPolicy: "every-occurrence" }, 0).runs).toEqual([
      { at: "2026-10-25T00:30:00Z", local: "2026-10-25T01:30:00+01:00", dst: "repeated" },
      { at: "2026-10-25T01:30:00Z", local: "2026-10-25T01:30:00+00:00", dst: "second-occurrence" },
    ]);
    const spring = {
      cron: "30 1 * * *",
      timeZone: "Europe/London",
      from: "2026-03-28T12:00:00Z",
      count: "1",
    };
    expect(previewSchedule({ ...spring, dstPolicy: "skip-gap" }, 0).runs).toEqual([
      {
        at: "2026-03-30T00:30:00Z",
        local: "2026-03-30T01:30:00+01:00",
        skippedLocal: ["2026-03-29T01:30:00"],
      },
    ]);
  });

  it("shows a jittered run at its offset, with the firing it stands for, the same each time", () => {
    const query = {
      cron: "0 9 * * *",
      jitter: "PT10M",
      jobId: "j_0123456789abcdefghjk",
      from: "2026-11-02T00:00:00Z",
      count: "3",
    };
    const { runs } = previewSchedule(query, 0);
    expect(runs.map((r) => r.firing)).toEqual([
      "2026-11-02T09:00:00Z",
      "2026-11-03T09:00:00Z",
      "2026-11-04T09:00:00Z",
    ]);
    for (const run of runs) {
      const offset = Date.parse(run.at) - Date.parse(run.firing as string);
      expect(offset).toBeGreaterThanOrEqual(0);
      expect(offset).toBeLessThan(600_000);
      expect(Duration.fromISO(run.jitter as string).as("milliseconds")).toBe(offset);
    }
    expect(previewSchedule(query, 0)).toEqual(previewSchedule(query, 0));
    const otherJob = previewSchedule({ ...query, jobId: "j_zzzzzzzzzzzzzzzzzzzz" }, 0);
    expect(otherJob.runs.map((r) => r.at)).not.toEqual(runs.map((r) => r.at));
  });

  it("stores no policy for the default, so older jobs and new ones read the same", () => {
    expect(scheduleFromFields({ cron: "0 9 * * *", dstPolicy: "first-occurrence" })).toEqual(
      scheduleFromFields({ cron: "0 9 * * *" }),
    );
    expect(scheduleFromFields({ cron: "0 9 * * *", dstPolicy: "skip-gap" })).toMatchObject({
      dstPolicy: "skip-gap",
    });
  });
});

describe("retry backoff", () => {
  it("doubles from 10 s up to the 1 h cap, with equal jitter between half and all of it", () => {
    const low = (retry: number) => retryDelayMs(retry, DEFAULT_BACKOFF, () => 0);
    const high = (retry: number) => retryDelayMs(retry, DEFAULT_BACKOFF, () => 1 - Number.EPSILON);
    expect([1, 2, 3, 4].map(low)).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect([1, 2, 3, 4].map(high)).toEqual([10_000, 20_000, 40_000, 80_000]);
    expect(high(20)).toBe(3_600_000);
    expect(low(5000)).toBe(1_800_000); // 2^4999 overflows; the cap still holds
  });

  it("uses a job's own base and cap", () => {
    expect(retryDelayMs(3, { baseMs: 1_000, capMs: 3_000 }, () => 0.5)).toBe(2_250);
    expect(retryDelayMs(0, { baseMs: 1_000, capMs: 3_000 }, () => 0)).toBe(500);
  });
});
