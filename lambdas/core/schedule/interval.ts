import { Duration } from "luxon";

/**
 * Fixed intervals, computed in UTC so DST never moves them: firings are anchor + k x every.
 * "every" is a number and a unit (90s, 15m, 2h, 1d, 1w) or an ISO 8601 duration of fixed
 * length (PT15M, P1D, P1W; months and years vary in length and are refused).
 */
export const MIN_INTERVAL_MS = 60_000;
export const MAX_INTERVAL_MS = 366 * 86_400_000;

const UNITS: Readonly<Record<string, number>> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

export class IntervalSyntaxError extends Error {}

export function parseEvery(text: string): number {
  const short = /^(\d{1,9})\s*([smhdw])$/i.exec(text.trim());
  let ms: number;
  if (short?.[1] && short[2]) {
    ms = Number(short[1]) * (UNITS[short[2].toLowerCase()] as number);
  } else {
    const duration = Duration.fromISO(text.trim());
    if (!duration.isValid) {
      throw new IntervalSyntaxError(
        `"${text}" is neither like 15m / 2h / 1d nor an ISO 8601 duration like PT15M`,
      );
    }
    if (duration.years || duration.quarters || duration.months) {
      throw new IntervalSyntaxError(
        "months and years vary in length; use a cron expression for calendar schedules",
      );
    }
    ms = duration.as("milliseconds");
  }
  if (!Number.isFinite(ms) || ms < MIN_INTERVAL_MS)
    throw new IntervalSyntaxError("must be at least one minute");
  if (ms > MAX_INTERVAL_MS) throw new IntervalSyntaxError("must be at most 366 days");
  if (ms % 1000 !== 0) throw new IntervalSyntaxError("must be a whole number of seconds");
  return ms;
}

/** The first firing anchor + k x every (k >= 0) strictly after `after`. */
export function nextIntervalFiring(anchor: number, everyMs: number, after: number): number {
  if (after < anchor) return anchor;
  return anchor + (Math.floor((after - anchor) / everyMs) + 1) * everyMs;
}
