import type { RunResponse } from "@jobsched/contract";

/**
 * Start lateness over time, from run history: each started run's lateness (startedAt minus
 * scheduledFor) in the minute it was due, and the 50th and 99th percentiles per minute (nearest
 * rank). Pure, so the page and the unit test share it.
 */
export interface LatenessSeries {
  /** Minute starts, epoch seconds (uPlot's x axis). */
  readonly minutes: number[];
  readonly p50: number[];
  readonly p99: number[];
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function latenessByMinute(runs: readonly RunResponse[]): LatenessSeries {
  const byMinute = new Map<number, number[]>();
  for (const run of runs) {
    if (run.startedAt === undefined) continue;
    const due = Date.parse(run.scheduledFor);
    const lateness = Math.max(0, Date.parse(run.startedAt) - due);
    const minute = Math.floor(due / 60_000) * 60;
    byMinute.set(minute, [...(byMinute.get(minute) ?? []), lateness]);
  }
  const minutes = [...byMinute.keys()].sort((a, b) => a - b);
  const sorted = minutes.map((m) => [...(byMinute.get(m) ?? [])].sort((a, b) => a - b));
  return {
    minutes,
    p50: sorted.map((values) => percentile(values, 50)),
    p99: sorted.map((values) => percentile(values, 99)),
  };
}
