import { formatInstant } from "./instant";
import { firingsAfter, type Schedule } from "./schedule/schedule";

/**
 * What to do with firings that were due while nothing ran them (an outage, a paused job):
 *
 * - `catch-up`: run every missed firing, the most recent CATCH_UP_CAP of them at most;
 * - `run-once` (default): one run, for the most recent missed firing, stands for them all;
 * - `skip`: none; the job waits for its next future firing.
 *
 * With `maxLatenessMs`, a firing more than that late is recorded as missed instead of run,
 * whatever the policy. Every firing not run is returned with a reason, so each due run is
 * accounted for. A firing counts as missed when it is more than `graceMs` in the past: a run
 * the sweep finds a few seconds late is just late, not missed.
 */
export const MissedRunPolicy = { CatchUp: "catch-up", RunOnce: "run-once", Skip: "skip" } as const;
export type MissedRunPolicy = (typeof MissedRunPolicy)[keyof typeof MissedRunPolicy];

/** The most missed firings one job runs under `catch-up` after one outage. */
export const CATCH_UP_CAP = 100;
/** The most firings one plan looks at; a longer backlog is planned over several calls. */
export const MAX_FIRINGS_PER_PLAN = 1_000;

export interface MissedRunOptions {
  readonly policy: MissedRunPolicy;
  readonly maxLatenessMs?: number | undefined;
  readonly graceMs: number;
}

export interface MissedFiring {
  readonly scheduledFor: number;
  readonly reason: string;
}

export interface RunPlan {
  /** Scheduled instants to create runs for, oldest first. */
  readonly create: number[];
  readonly missed: MissedFiring[];
  /** The first firing this plan did not handle: the job's next run. Undefined when none is left. */
  readonly next: number | undefined;
}

/**
 * Plans the runs for every firing after `lastHandled` and before `horizon` (default: now,
 * inclusive), given the time is `now`.
 */
export function planRuns(
  schedule: Schedule,
  options: MissedRunOptions,
  lastHandled: number,
  now: number,
  horizon: number = now + 1,
): RunPlan {
  const missedBefore = now - options.graceMs;
  const firings: number[] = [];
  let next: number | undefined;
  let truncated = false;
  for (const { at } of firingsAfter(schedule, lastHandled)) {
    if (at >= horizon) {
      next = at;
      break;
    }
    if (firings.length === MAX_FIRINGS_PER_PLAN) {
      next = at;
      truncated = at < missedBefore; // the batch holds only older misses; later calls see the rest
      break;
    }
    firings.push(at);
  }

  const create: number[] = [];
  const missed: MissedFiring[] = [];
  const tooLate = (at: number) => options.maxLatenessMs !== undefined && now - at > options.maxLatenessMs;
  const lateness = `more than maxLateness (${(options.maxLatenessMs ?? 0) / 1000} s) late`;

  const overdue = firings.filter((at) => at < missedBefore);
  const onTime = firings.filter((at) => at >= missedBefore);
  const eligible = overdue.filter((at) => !tooLate(at));
  for (const at of overdue) if (tooLate(at)) missed.push({ scheduledFor: at, reason: lateness });

  const kept = truncated ? [] : keptByPolicy(options.policy, eligible);
  const keptSet = new Set(kept);
  const latest = eligible.at(-1);
  for (const at of eligible) {
    if (keptSet.has(at)) continue;
    missed.push({ scheduledFor: at, reason: policyReason(options.policy, latest, truncated) });
  }
  create.push(...kept);

  for (const at of onTime) {
    if (tooLate(at)) missed.push({ scheduledFor: at, reason: lateness });
    else create.push(at);
  }
  missed.sort((a, b) => a.scheduledFor - b.scheduledFor);
  return { create, missed, next };
}

function keptByPolicy(policy: MissedRunPolicy, eligible: number[]): number[] {
  switch (policy) {
    case MissedRunPolicy.CatchUp:
      return eligible.slice(-CATCH_UP_CAP);
    case MissedRunPolicy.RunOnce:
      return eligible.slice(-1);
    case MissedRunPolicy.Skip:
      return [];
  }
}

function policyReason(policy: MissedRunPolicy, latest: number | undefined, truncated: boolean): string {
  switch (policy) {
    case MissedRunPolicy.CatchUp:
      return `missed: more than the catch-up cap of ${CATCH_UP_CAP} runs`;
    case MissedRunPolicy.RunOnce:
      return truncated
        ? "missed: a later firing runs instead (missedRuns: run-once)"
        : `missed: the run for ${formatInstant(latest as number)} stands for it (missedRuns: run-once)`;
    case MissedRunPolicy.Skip:
      return "missed: skipped (missedRuns: skip)";
  }
}
