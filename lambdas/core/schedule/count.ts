import type { DstPolicy } from "@jobsched/contract";
import { CronExpressionParser } from "cron-parser";
import { DateTime, type IANAZone } from "luxon";
import { cronFirings } from "./cron";
import { nextFiring, type Schedule } from "./schedule";
import { offsetAt, zoneOf } from "./zone-time";

const DAY = 86_400_000;

/**
 * How many firings a schedule has strictly between `after` and `before`, without walking them
 * one by one where it need not: a summary of a long pause (a minute job paused for a year has
 * half a million firings, ~40 µs each to walk) must not hold up the sweep that writes it.
 *
 * Interval schedules are counted by arithmetic. Cron schedules by day: on a local day with
 * one offset from start to end (and after such a day, so that no time skipped the evening
 * before was moved into it), the firings are the matching local times, so a matching day has
 * (minutes x hours) of them; the days are matched by cron-parser itself (the same day fields,
 * so the same rules for L, #, and both day fields restricted). Days with a DST change, the day
 * after, and the partial days at either end are walked firing by firing, by the job's DST
 * policy (the policies differ only on those days). With jitter, runs are counted by their
 * jittered instants.
 */
export function countFirings(schedule: Schedule, after: number, before: number): number {
  if (before - after <= 1) return 0;
  const { jitter, ...plain } = schedule;
  if (!jitter) return countFiringInstants(schedule, after, before);
  // A jittered run falls before its next firing, so only one firing can be due on the other
  // side of each end from its own instant: the first due after `after` (its instant may be at
  // or before `after`) and the first due at or after `before` (its instant may be before it).
  let count = countFiringInstants(plain, after, before);
  const intoRange = nextFiring(schedule, after);
  if (intoRange?.jittered && intoRange.jittered.firingAt <= after && intoRange.at < before) count += 1;
  const outOfRange = nextFiring(schedule, before - 1);
  const firingAt = outOfRange?.jittered?.firingAt;
  if (firingAt !== undefined && firingAt > after && firingAt < before) count -= 1;
  return count;
}

/** How many firing instants (no jitter) lie strictly between `after` and `before`. */
function countFiringInstants(schedule: Schedule, after: number, before: number): number {
  switch (schedule.kind) {
    case "once":
      return schedule.runAt > after && schedule.runAt < before ? 1 : 0;
    case "interval": {
      const lo = Math.max(after, (schedule.startAt ?? Number.NEGATIVE_INFINITY) - 1);
      const hi = Math.min(before, (schedule.endAt ?? Number.POSITIVE_INFINITY) + 1);
      // k with lo < anchor + k * every < hi
      const first = Math.floor((lo - schedule.anchor) / schedule.everyMs) + 1;
      const last = Math.ceil((hi - schedule.anchor) / schedule.everyMs) - 1;
      return Math.max(0, last - first + 1);
    }
    case "cron": {
      const zone = zoneOf(schedule.timeZone);
      if (!zone) return 0;
      const lo = Math.max(after, (schedule.startAt ?? Number.NEGATIVE_INFINITY) - 1);
      const hi = Math.min(before, (schedule.endAt ?? Number.POSITIVE_INFINITY) + 1);
      return hi - lo > 1 ? countCron(schedule.cron, zone, lo, hi, schedule.dstPolicy) : 0;
    }
  }
}

function countCron(
  fields: string,
  zone: IANAZone,
  after: number,
  before: number,
  policy: DstPolicy | undefined,
): number {
  const parsed = CronExpressionParser.parse(fields, { tz: "UTC" });
  const perDay = parsed.fields.minute.values.length * parsed.fields.hour.values.length;
  const firstDay = naiveDayOf(zone, after + 1);
  const lastDay = naiveDayOf(zone, before - 1);
  const matching = matchingDays(fields, firstDay, lastDay);

  let count = 0;
  let previousRegular = false;
  for (let day = firstDay; day <= lastDay; day++) {
    const start = dayStart(zone, day);
    const end = dayStart(zone, day + 1);
    const regular = end - start === DAY && offsetAt(zone, start) === offsetAt(zone, end - 1);
    if (regular && previousRegular && start > after && end <= before) {
      if (matching.has(day)) count += perDay;
    } else {
      count += walk(fields, zone, Math.max(after, start - 1), Math.min(before, end), policy);
    }
    previousRegular = regular;
  }
  return count;
}

/** Firings strictly between `after` and `before`, one by one. */
function walk(
  fields: string,
  zone: IANAZone,
  after: number,
  before: number,
  policy: DstPolicy | undefined,
): number {
  let count = 0;
  for (const { at } of cronFirings(fields, zone, after, before, policy)) {
    if (at >= before) break;
    count += 1;
  }
  return count;
}

/** The local calendar day (days since the epoch, on the naive timeline) an instant falls in. */
function naiveDayOf(zone: IANAZone, at: number): number {
  return Math.floor((at + offsetAt(zone, at)) / DAY);
}

/** The first instant of a local calendar day (luxon moves a midnight lost to DST forward). */
function dayStart(zone: IANAZone, day: number): number {
  const date = DateTime.fromMillis(day * DAY, { zone: "UTC" });
  return DateTime.fromObject({ year: date.year, month: date.month, day: date.day }, { zone }).toMillis();
}

/** The local days from first to last whose date the expression's day fields match. */
function matchingDays(fields: string, first: number, last: number): Set<number> {
  const [, , dayOfMonth, month, dayOfWeek] = fields.split(" ");
  const days = CronExpressionParser.parse(`0 0 ${dayOfMonth} ${month} ${dayOfWeek}`, {
    tz: "UTC",
    currentDate: new Date(first * DAY - 1),
    endDate: new Date(last * DAY),
  });
  const found = new Set<number>();
  for (;;) {
    try {
      found.add(Math.floor(days.next().getTime() / DAY));
    } catch {
      return found; // past endDate
    }
  }
}
