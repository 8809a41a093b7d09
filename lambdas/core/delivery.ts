import type { RunMessage } from "./ports";

/** SQS accepts DelaySeconds from 0 to 900. */
export const MAX_DELAY_SECONDS = 900;

/**
 * The delay that makes a run visible at its due second: rounded up, so a run never starts
 * before its time (at most one second after it), and clamped to what SQS accepts. A run due
 * later than 15 minutes is never enqueued by the sweep, which only looks a tick ahead.
 */
export function delaySecondsUntil(dueAt: number, now: number): number {
  const seconds = Math.ceil((dueAt - now) / 1000);
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, seconds));
}

export function runMessageOf(run: { runId: string; jobId: string; scheduledFor: number }): RunMessage {
  return { runId: run.runId, jobId: run.jobId, scheduledFor: run.scheduledFor };
}
