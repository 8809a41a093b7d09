import { type Random, retryDelayMs } from "../backoff";
import type { Job } from "../job";
import type { RetryPlan, RunOutcome } from "../ports";
import { type Run, RunStatus } from "../run";
import { failedAttemptsAfter } from "./failed-attempts";

/**
 * How a run ends, decided in one place (decision 0037): what a worker's success or failure, or
 * a lease that lapsed once too often, makes of it. The use cases apply the answer as a
 * lifecycle event (finish or retry) through the run store.
 */
export type Ending = Omit<RunOutcome, "final">;

export function succeeded(now: number): Ending {
  return { status: RunStatus.Succeeded, error: undefined, now };
}

/** A failure as the worker reports it. */
export interface ReportedFailure {
  readonly error?: string | undefined;
  readonly retryable: boolean;
  /** Seconds a Retry-After asked for (a worker's, or a webhook endpoint's). */
  readonly retryAfter?: number | undefined;
}

export type FailureDecision =
  | { readonly kind: "retry"; readonly plan: RetryPlan }
  | { readonly kind: "dead-letter"; readonly ending: Ending };

/**
 * A failed attempt retries, with the job's backoff (equal jitter) and a Retry-After as a floor
 * within the cap, when it says it may and attempts are left; at-most-once runs never retry (a
 * failed run may have done part of its work). Otherwise it is dead-lettered with its error.
 */
export function decideFailure(
  failure: ReportedFailure,
  run: Pick<Run, "attempt" | "fence" | "startedAt" | "failedAttempts">,
  job: Pick<Job, "maxAttempts" | "retry" | "delivery"> | undefined,
  context: { readonly now: number; readonly random: Random; readonly repairGraceMs: number },
): FailureDecision {
  const { now } = context;
  const error = failure.error ?? "failed (no error given)";
  const atMostOnce = job?.delivery === "at-most-once";
  if (failure.retryable && job !== undefined && run.attempt < job.maxAttempts && !atMostOnce) {
    const asked = Math.min((failure.retryAfter ?? 0) * 1000, job.retry.capMs);
    const retryAt = now + Math.max(asked, retryDelayMs(run.attempt, job.retry, context.random));
    const failedAttempts = failedAttemptsAfter(run, error, now);
    return {
      kind: "retry",
      plan: { error, retryAt, checkAt: retryAt + context.repairGraceMs, now, failedAttempts },
    };
  }
  const why = atMostOnce
    ? `${error} (at-most-once: not retried)`
    : failure.retryable
      ? `${error} (attempt ${run.attempt} of ${job?.maxAttempts ?? run.attempt})`
      : error;
  return { kind: "dead-letter", ending: { status: RunStatus.DeadLettered, error: why, now } };
}

/**
 * A run leased more often than its job's maxAttempts without a completion (every lease lapsed:
 * workers died or hung) is not handed out again: it is dead-lettered.
 */
export function exhaustedByLapses(
  leased: Pick<Run, "attempt" | "error">,
  job: Pick<Job, "maxAttempts">,
  now: number,
): Ending | undefined {
  if (leased.attempt <= job.maxAttempts) return undefined;
  const error = leased.error ?? `${job.maxAttempts} lease(s) lapsed without a completion`;
  return { status: RunStatus.DeadLettered, error, now };
}

/** Why a waiting retry is dead-lettered when its job became at-most-once before it ran again. */
export const DROPPED_RETRY_REASON = "its job became at-most-once while a retry waited: not run again";
