import type { RunMessage } from "./ports";

/** SQS accepts DelaySeconds from 0 to 900. */
export const MAX_DELAY_SECONDS = 900;

/**
 * The delay after which a run's message becomes visible: SQS counts whole seconds, so this
 * rounds down and the message shows up at most a second before the run is due; the lease step
 * holds an early message until the due instant (see EARLY_HOLD_MS). Rounding up instead would
 * start runs up to a second late. Clamped to what SQS accepts; the sweep only enqueues runs
 * due within its lookahead, far below 15 minutes.
 */
export function delaySecondsUntil(dueAt: number, now: number): number {
  const seconds = Math.floor((dueAt - now) / 1000);
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, seconds));
}

/**
 * How early a run may be received and still be held in the lease step until its due instant.
 * A message visible earlier than this (a repair's resend, clock skew) goes back to the queue.
 */
export const EARLY_HOLD_MS = 1_500;

export function runMessageOf(run: RunMessage): RunMessage {
  return { runId: run.runId, jobId: run.jobId, scheduledFor: run.scheduledFor, type: run.type };
}
