import type { RunResponse } from "@jobsched/contract";

/**
 * A run as a timeline (decision 0063): its attempts in order, each with its lease's fence, when
 * it started and how it ended, and a bar from the run's scheduled instant to its last known
 * instant. Pure (the page passes the clock in), so the page and the unit test share it. The
 * failed attempts are the ones the API keeps (`failedAttempts`, decision 0062); the run's own
 * fields are its latest attempt's.
 */
export type Outcome = RunResponse["status"] | "failed" | "running" | "lapsed";

export interface AttemptLine {
  readonly attempt: number;
  /**
   * Its lease's fence. Undefined for a lease a cancel ended: a cancel that revokes a lease
   * raises the fence past it, one that ends a lapsed lease does not, and the run does not say
   * which it was (the line names both).
   */
  readonly fence: number | undefined;
  /** The run's fence, for a line whose own fence is undefined. */
  readonly runFence: number;
  /** When it started (epoch ms), and since the run's scheduled instant. */
  readonly startedAt: number | undefined;
  readonly startedAfter: number | undefined;
  /** How long it ran, ms (undefined while it runs, or when its start is unknown). */
  readonly took: number | undefined;
  readonly outcome: Outcome;
  readonly error: string | undefined;
  /** A running attempt's lease: when it ends unless its worker heartbeats. */
  readonly leaseUntil?: number | undefined;
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
   * Fences of leases the run had but does not list, as ranges ("2, 4-6"): a lease that lapsed
   * or was given back, the attempt that ended a round before a replay, or a failure beyond the
   * last 10 kept. Empty when every lease is listed.
   */
  readonly unlistedFences: string;
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

export function runTimeline(run: RunResponse, now: number): RunTimeline {
  const scheduled = Date.parse(run.scheduledFor);
  const failed = run.failedAttempts ?? [];
  const lastFailedAt = ms(failed.at(-1)?.failedAt) ?? Number.NEGATIVE_INFINITY;
  const started = ms(run.startedAt);
  // The latest attempt, when the run's fields are one not already listed: started after the
  // last recorded failure (a waiting retry's fields are that failure's; a cancel raises the
  // fence without a lease, so the fence cannot tell), in a status a lease leads to.
  const current =
    started !== undefined && started > lastFailedAt && run.attempt > 0 && ATTEMPT_STATUSES.has(run.status)
      ? currentAttempt(run, started, now)
      : undefined;

  const lines: AttemptLine[] = failed.map((a) => {
    const start = ms(a.startedAt);
    return {
      attempt: a.attempt,
      fence: a.fence,
      runFence: run.fence,
      startedAt: start,
      startedAfter: start === undefined ? undefined : start - scheduled,
      took: start === undefined ? undefined : Date.parse(a.failedAt) - start,
      outcome: "failed",
      error: a.error,
    };
  });
  if (current) {
    lines.push({
      attempt: run.attempt,
      fence: run.status === "cancelled" ? undefined : run.fence,
      runFence: run.fence,
      startedAt: current.start,
      startedAfter: current.start - scheduled,
      took:
        current.outcome === "running" || current.end === undefined ? undefined : current.end - current.start,
      outcome: current.outcome,
      // Only an ended attempt's: a lease keeps the error of the failure before it.
      error: ENDED_WITH_ERROR.has(current.outcome) ? run.error : undefined,
      ...(current.outcome === "running" ? { leaseUntil: ms(run.leaseExpiresAt) } : {}),
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

  const ending =
    current === undefined && run.status !== "pending" && run.status !== "leased"
      ? { status: run.status, reason: run.error }
      : undefined;
  return {
    lines,
    segments,
    span: end - scheduled,
    retry: retryAt === undefined ? undefined : { at: at(retryAt), after: retryAt - scheduled },
    unlistedFences: rangesText(unlistedFences(run, lines)),
    ending,
  };
}

const ENDED_WITH_ERROR: ReadonlySet<Outcome> = new Set(["dead-lettered", "lost", "cancelled"]);

function currentAttempt(run: RunResponse, start: number, now: number) {
  if (run.status !== "leased") return { start, end: ms(run.finishedAt), outcome: run.status as Outcome };
  const until = ms(run.leaseExpiresAt);
  // A lease whose time is up and that no one has taken over yet: its worker stopped answering.
  if (until !== undefined && until <= now) return { start, end: until, outcome: "lapsed" as Outcome };
  // Running: the bar reaches now, not the lease's end (a heartbeat moves that).
  return { start, end: Math.max(start, now), outcome: "running" as Outcome };
}

/**
 * Every lease raises the fence by one, so fences 1 to the run's are its leases, but for the one
 * a cancel may add (a cancelled run's top fence, and the one below it when the cancel ended a
 * lease: see AttemptLine.fence). Those the lines do not show are the leases not listed.
 */
function unlistedFences(run: RunResponse, lines: readonly AttemptLine[]): number[] {
  const cancelled = run.status === "cancelled";
  const endedLease = lines.some((l) => l.fence === undefined);
  const top = cancelled ? run.fence - (endedLease ? 2 : 1) : run.fence;
  const listed = new Set(lines.map((l) => l.fence));
  const missing: number[] = [];
  for (let fence = 1; fence <= top; fence += 1) if (!listed.has(fence)) missing.push(fence);
  return missing;
}

/** 1, 2, 3, 5, 7, 8 as "1-3, 5, 7-8". */
export function rangesText(numbers: readonly number[]): string {
  const parts: string[] = [];
  let i = 0;
  while (i < numbers.length) {
    const first = numbers[i] as number;
    let last = first;
    while (numbers[i + 1] === last + 1) {
      i += 1;
      last += 1;
    }
    parts.push(first === last ? `${first}` : `${first}-${last}`);
    i += 1;
  }
  return parts.join(", ");
}

/** A span of time as people read it: 420 ms, 1.4 s, 2 min 5 s, 3 h 10 min, 2 d 4 h. */
export function durationText(ms: number): string {
  const sign = ms < 0 ? "-" : "";
  const abs = Math.abs(ms);
  if (Math.round(abs) < 1_000) return `${sign}${Math.round(abs)} ms`;
  // Rounded first, so 59.99 s reads "1 min 0 s", never "60 s".
  const tenths = Math.round(abs / 100);
  if (tenths < 100) return `${sign}${(tenths / 10).toFixed(1)} s`;
  const s = Math.round(abs / 1_000);
  if (s < 60) return `${sign}${s} s`;
  if (s < 3_600) return `${sign}${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}

/** An instant's time of day in UTC, to the millisecond: 09:00:00.412Z. */
export function clockText(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(11, 23)}Z`;
}
