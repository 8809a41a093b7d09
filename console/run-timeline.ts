import type { RunResponse } from "@jobsched/contract";

/**
 * A run as a timeline (decision 0063): its attempts in order, each with its lease's fence, when
 * it started and how it ended, and a bar from the run's scheduled instant to its last known
 * instant. Pure, so the page and the unit test share it. The failed attempts are the ones the
 * API keeps (`failedAttempts`, decision 0062); the run's own fields are its latest attempt's.
 */
export type Outcome = RunResponse["status"] | "failed" | "running";

export interface AttemptLine {
  readonly attempt: number;
  readonly fence: number;
  /** Since the run's scheduled instant, ms (undefined: its start was not recorded). */
  readonly startedAfter: number | undefined;
  /** How long it ran, ms (undefined while it runs, or when its start is unknown). */
  readonly took: number | undefined;
  readonly outcome: Outcome;
  readonly error: string | undefined;
}

export interface Segment {
  readonly kind: "wait" | Outcome;
  /** Where it starts and ends on the bar, 0 to 1. */
  readonly from: number;
  readonly to: number;
}

export interface RunTimeline {
  readonly lines: readonly AttemptLine[];
  readonly segments: readonly Segment[];
  /** What the bar spans, ms from the run's scheduled instant (0: nothing happened after it). */
  readonly span: number;
  /** A waiting retry's instant on the bar, 0 to 1, and since the scheduled instant, ms. */
  readonly retry: { readonly at: number; readonly after: number } | undefined;
  /**
   * Earlier attempts the run counts but does not list: a lease that lapsed is not recorded, and
   * only the last failures are kept. 0 after a replay, whose attempts count from 0 again.
   */
  readonly unlisted: number;
  /** The run's end when no attempt of it ended it: cancelled, missed, skipped unstarted. */
  readonly ending:
    | { readonly status: RunResponse["status"]; readonly reason: string | undefined }
    | undefined;
}

const ms = (instant: string | undefined) => (instant === undefined ? undefined : Date.parse(instant));

/** Statuses a lease ends in (or is in): the run's own fields are then an attempt's. */
const ATTEMPT_STATUSES: ReadonlySet<RunResponse["status"]> = new Set([
  "leased",
  "succeeded",
  "dead-lettered",
  "lost",
  "cancelled",
]);

export function runTimeline(run: RunResponse): RunTimeline {
  const scheduled = Date.parse(run.scheduledFor);
  const failed = run.failedAttempts ?? [];
  const lastFailedFence = failed.at(-1)?.fence ?? -1;
  const started = ms(run.startedAt);
  // The latest attempt, when the run's fields are one not already listed as failed (a waiting
  // retry's are; a replayed run's are its previous round's).
  const current =
    started !== undefined &&
    run.attempt > 0 &&
    run.fence > lastFailedFence &&
    ATTEMPT_STATUSES.has(run.status)
      ? {
          start: started,
          end: run.status === "leased" ? ms(run.leaseExpiresAt) : ms(run.finishedAt),
          outcome: (run.status === "leased" ? "running" : run.status) as Outcome,
        }
      : undefined;

  const lines: AttemptLine[] = failed.map((a) => {
    const start = ms(a.startedAt);
    return {
      attempt: a.attempt,
      fence: a.fence,
      startedAfter: start === undefined ? undefined : start - scheduled,
      took: start === undefined ? undefined : Date.parse(a.failedAt) - start,
      outcome: "failed",
      error: a.error,
    };
  });
  if (current) {
    lines.push({
      attempt: run.attempt,
      fence: run.fence,
      startedAfter: current.start - scheduled,
      took:
        current.outcome === "running" || current.end === undefined ? undefined : current.end - current.start,
      outcome: current.outcome,
      error: current.outcome === "succeeded" ? undefined : run.error,
    });
  }

  const retryAt = run.status === "pending" ? ms(run.retryAt) : undefined;
  const instants = [
    scheduled,
    ...failed.flatMap((a) => [ms(a.startedAt), Date.parse(a.failedAt)]),
    current?.start,
    current?.end,
    ms(run.finishedAt),
    retryAt,
  ].filter((t): t is number => t !== undefined && Number.isFinite(t));
  const end = Math.max(...instants);
  const scale = Math.max(1, end - scheduled);
  const at = (t: number) => Math.min(1, Math.max(0, (t - scheduled) / scale));

  const segments: Segment[] = [];
  const firstStart = failed.map((a) => ms(a.startedAt)).find((t) => t !== undefined) ?? current?.start;
  if (firstStart !== undefined && firstStart > scheduled)
    segments.push({ kind: "wait", from: 0, to: at(firstStart) });
  for (const a of failed) {
    const start = ms(a.startedAt);
    if (start !== undefined)
      segments.push({ kind: "failed", from: at(start), to: at(Date.parse(a.failedAt)) });
  }
  if (current) segments.push({ kind: current.outcome, from: at(current.start), to: at(current.end ?? end) });

  const counted = current ? run.attempt - 1 : run.attempt;
  const unlisted = run.replays === undefined ? Math.max(0, counted - failed.length) : 0;
  const ending =
    current === undefined && run.status !== "pending" && run.status !== "leased"
      ? { status: run.status, reason: run.error }
      : undefined;
  return {
    lines,
    segments,
    span: end - scheduled,
    retry: retryAt === undefined ? undefined : { at: at(retryAt), after: retryAt - scheduled },
    unlisted,
    ending,
  };
}

/** A span of time as people read it: 420 ms, 1.4 s, 2 min 5 s, 3 h 10 min, 2 d 4 h. */
export function durationText(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "-" : "";
  if (abs < 1_000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  const s = Math.floor(abs / 1_000);
  if (s < 3_600) return `${sign}${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}
