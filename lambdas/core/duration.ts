import { Duration } from "luxon";
import { ValidationError } from "./errors";

/** The longest duration any field takes: a year and a day, whichever way it is written. */
export const MAX_DURATION_MS = 366 * 86_400_000;

/** A length of time as the API shows it: an ISO 8601 duration in its largest units (PT4M17S). */
export function isoDuration(ms: number): string {
  return Duration.fromMillis(ms).rescale().toISO() as string;
}

/**
 * A length of time as the API takes it: whole seconds, or an ISO 8601 duration of fixed length
 * (PT15M, P1D). Months and years vary in length and are refused; so is anything over 366 days
 * (P1000000000D would overflow the numbers DynamoDB and the SDK carry).
 */
export function durationMs(value: number | string, field: string): number {
  if (typeof value === "number") return value * 1000;
  const duration = Duration.fromISO(value);
  if (!duration.isValid) {
    throw new ValidationError(`${field}: "${value}" is not an ISO 8601 duration like PT15M`, field);
  }
  if (duration.years || duration.quarters || duration.months) {
    throw new ValidationError(`${field}: months and years vary in length; use days or smaller units`, field);
  }
  const ms = duration.as("milliseconds");
  if (!Number.isFinite(ms) || ms < 1000) {
    throw new ValidationError(`${field}: must be at least one second`, field);
  }
  if (ms > MAX_DURATION_MS) throw new ValidationError(`${field}: must be at most 366 days`, field);
  return ms;
}
