import { MissedRunPolicy } from "@jobsched/contract";
import { type SchedulerSettings, sweepPeriodSeconds } from "../definitions/settings";
import { formatInstant } from "./instant";
import { countFirings } from "./schedule/count";
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
 *
 * A long backlog (more than CATCH_UP_CAP overdue firings: a job resumed after a month's pause,
 * a long outage) is not recorded firing by firing: the firings its policy runs are planned as
 * usual, and every older one is one summary record (count, first, last). Nothing is walked one
 * by one that need not be, so the first run after a resume is on time however long the pause.
 */
export { MissedRunPolicy };

/** The most missed firings one job runs under `catch-up` after one outage. */
export const CATCH_UP_CAP = 100;
/** The most firings one plan looks at; a longer backlog is planned over several calls. */
export const MAX_FIRINGS_PER_PLAN = 1_000;

export interface MissedRunOptions {
  readonly policy: MissedRunPolicy;
  readonly maxLatenessMs?: number | undefined;
  readonly graceMs: number;
}

/**
 * A job's missed-run options as the sweep and a create judge its firings: its policy and
 * maxLateness, and a grace of a shard group's sweep period (decision 0056).
 */
export function missedRunOptionsOf(
  job: { readonly missedRuns: MissedRunPolicy; readonly maxLatenessMs?: number | undefined },
  settings: Pick<SchedulerSettings, "tickSeconds" | "sweepEveryTicks">,
): MissedRunOptions {
  return {
    policy: job.missedRuns,
    maxLatenessMs: job.maxLatenessMs,
    graceMs: sweepPeriodSeconds(settings) * 1000,
  };
}

export interface MissedFiring {
  /** The firing; for a summary, the first it stands for. */
  readonly scheduledFor: number;
  readonly reason: string;
  /** A summary of a long backlog: how many firings it stands for, and the last of them. */
  readonly summary?: { readonly count: number; readonly through: number } | undefined;
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
  const backlog = longBacklog(schedule, lastHandled, missedBefore, keptAtMost(options.policy));
  const firings: number[] = [];
  let next: number | undefined;
  for (const { at } of firingsAfter(schedule, backlog?.through ?? lastHandled)) {
    if (at >= horizon) {
      next = at;
      break;
    }
    if (firings.length === MAX_FIRINGS_PER_PLAN) {
      // Only on-time firings can be this many (at most keptAtMost overdue ones are listed).
      next = at;
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

  const kept = keptByPolicy(options.policy, eligible);
  const keptSet = new Set(kept);
  const latest = eligible.at(-1);
  for (const at of eligible) {
    if (keptSet.has(at)) continue;
    missed.push({ scheduledFor: at, reason: policyReason(options.policy, latest) });
  }
  create.push(...kept);

  for (const at of onTime) {
    if (tooLate(at)) missed.push({ scheduledFor: at, reason: lateness });
    else create.push(at);
  }
  if (backlog) {
    // Older than every listed firing, so its oldest are the latest: too late all, some, or none.
    const reason = tooLate(backlog.through)
      ? lateness
      : tooLate(backlog.first)
        ? `${lateness}, or ${policyReason(options.policy, latest)}`
        : policyReason(options.policy, latest);
    missed.push({
      scheduledFor: backlog.first,
      reason,
      summary: { count: backlog.count, through: backlog.through },
    });
  }
  missed.sort((a, b) => a.scheduledFor - b.scheduledFor);
  return { create, missed, next };
}

/** The most overdue firings a policy may run after one outage. */
function keptAtMost(policy: MissedRunPolicy): number {
  switch (policy) {
    case MissedRunPolicy.CatchUp:
      return CATCH_UP_CAP;
    case MissedRunPolicy.RunOnce:
      return 1;
    case MissedRunPolicy.Skip:
      return 0;
  }
}

/**
 * The part of a long backlog of overdue firings that a plan summarises: every firing after
 * `lastHandled` and before `missedBefore` but the latest `kept` (which the policy may run).
 * Undefined when there are no more than CATCH_UP_CAP overdue firings: those are listed.
 */
function longBacklog(
  schedule: Schedule,
  lastHandled: number,
  missedBefore: number,
  kept: number,
): { first: number; through: number; count: number } | undefined {
  const overdue: number[] = [];
  for (const { at } of firingsAfter(schedule, lastHandled)) {
    if (at >= missedBefore || overdue.length > CATCH_UP_CAP) break;
    overdue.push(at);
  }
  const first = overdue[0];
  if (first === undefined || overdue.length <= CATCH_UP_CAP) return undefined;
  // The latest kept + 1 overdue firings: the oldest of them is the summary's last.
  const [through, firstKept] = latestFirings(schedule, lastHandled, missedBefore, kept + 1);
  if (through === undefined) return undefined;
  return { first, through, count: countFirings(schedule, lastHandled, firstKept ?? missedBefore) };
}

/** The latest `k` firings strictly between `after` and `before`, oldest first, found backwards by a widening window. */
function latestFirings(schedule: Schedule, after: number, before: number, k: number): number[] {
  for (let span = 3_600_000; ; span *= 4) {
    const from = Math.max(after, before - span);
    const found: number[] = [];
    for (const { at } of firingsAfter(schedule, from)) {
      if (at >= before) break;
      found.push(at);
    }
    if (found.length >= k || from === after) return found.slice(-k);
  }
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

/**
 * Why the policy did not run a firing. `latest` is the firing run-once runs: there is one
 * whenever a firing was left out by the policy rather than by maxLateness, so call this only then.
 */
function policyReason(policy: MissedRunPolicy, latest: number | undefined): string {
  switch (policy) {
    case MissedRunPolicy.CatchUp:
      return `missed: more than the catch-up cap of ${CATCH_UP_CAP} runs`;
    case MissedRunPolicy.RunOnce:
      return `missed: the run for ${formatInstant(latest as number)} stands for it (missedRuns: run-once)`;
    case MissedRunPolicy.Skip:
      return "missed: skipped (missedRuns: skip)";
  }
}
