import { MAX_DELAY_SECONDS } from "./aws-limits";
import type { RunMessage } from "./ports";

/**
 * How many seconds before its due second a run's message becomes visible. The lease step
 * grants the lease at once and hands it over on the due instant, so the database work of a
 * spike (a thousand runs due at 09:00:00) is done in the seconds before it instead of after.
 */
export const DELIVERY_LEAD_SECONDS = 5;

/**
 * The delay after which a run's message becomes visible: DELIVERY_LEAD_SECONDS to one second
 * more before it is due (SQS counts whole seconds, so this rounds down; rounding up would start
 * runs up to a second late). Clamped to what SQS accepts; the sweep only enqueues runs due
 * within its lookahead, far below 15 minutes.
 */
export function delaySecondsUntil(dueAt: number, now: number): number {
  const seconds = Math.floor((dueAt - now) / 1000) - DELIVERY_LEAD_SECONDS;
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, seconds));
}

/** The delay after which a message is visible only once `instant` has passed (a lease's end). */
export function delaySecondsAfter(instant: number, now: number): number {
  const seconds = Math.ceil((instant - now) / 1000) + 1;
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, seconds));
}

/**
 * How early a run may be received and still be held in the lease step until its due instant.
 * A message visible earlier than this (a repair's resend, clock skew) goes back to the queue.
 */
export const EARLY_HOLD_MS = (DELIVERY_LEAD_SECONDS + 1) * 1000;

export function runMessageOf(
  run: Omit<RunMessage, "notBefore"> & { readonly retryAt?: number | undefined },
): RunMessage {
  return {
    runId: run.runId,
    jobId: run.jobId,
    scheduledFor: run.scheduledFor,
    tenant: run.tenant,
    type: run.type,
    ...(run.retryAt === undefined ? {} : { notBefore: run.retryAt }),
  };
}
