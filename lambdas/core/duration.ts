import { Duration } from "luxon";
import { ValidationError } from "./errors";

/**
 * A length of time as the API takes it: whole seconds, or an ISO 8601 duration of fixed length
 * (PT15M, P1D). Months and years vary in length and are refused.
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
  if (ms < 1000) throw new ValidationError(`${field}: must be at least one second`, field);
  return ms;
}
