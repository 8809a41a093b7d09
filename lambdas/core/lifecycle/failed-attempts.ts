import { excerpt } from "../excerpt";
import type { FailedAttempt, Run } from "../run";

/**
 * How many failed attempts a run keeps, and how much of each one's error (decision 0062). A
 * job may allow 100 attempts and an error may be 4,096 characters: kept whole, a run's item
 * could pass DynamoDB's 400 KB item limit, and every write to it would cost a unit a KB.
 * Bounded, the list takes at most about 6.5 KB (10 entries of 200 UTF-16 units, at most 3 bytes
 * of UTF-8 each, and their numbers).
 */
export const FAILED_ATTEMPTS_KEPT = 10;
export const FAILED_ATTEMPT_ERROR_CHARS = 200;

/** The beginning of an error, as the run keeps it. */
export function errorExcerpt(error: string): string {
  return excerpt(error, FAILED_ATTEMPT_ERROR_CHARS);
}

/**
 * A leased run's failed attempts once its current attempt failed with `error` at `now` and is
 * retried: the ones it kept and this one, the oldest dropped beyond FAILED_ATTEMPTS_KEPT. The
 * retry writes the whole list under its fence, so the run read to decide it is the run written.
 */
export function failedAttemptsAfter(
  run: Pick<Run, "attempt" | "fence" | "startedAt" | "failedAttempts">,
  error: string,
  now: number,
): readonly FailedAttempt[] {
  const latest: FailedAttempt = {
    attempt: run.attempt,
    fence: run.fence,
    startedAt: run.startedAt,
    failedAt: now,
    error: errorExcerpt(error),
  };
  return [...(run.failedAttempts ?? []), latest].slice(-FAILED_ATTEMPTS_KEPT);
}
