import type { DstPolicy } from "@jobsched/contract";
import { type CronFiringKind, cronFirings } from "./cron";
import { nextIntervalFiring } from "./interval";
import { type Jitter, jitterOffsetMs } from "./jitter";
import { zoneOf } from "./zone-time";

/**
 * When a job runs. All instants are epoch milliseconds; `startAt` and `endAt` bound recurring
 * schedules (both inclusive): they bound the firings, and a jittered run may fall after endAt.
 */
interface Jittered {
  /** Each firing runs at a stable offset inside this window (jitter.ts); absent: on its instant. */
  readonly jitter?: Jitter;
}

export interface OnceSchedule extends Jittered {
  readonly kind: "once";
  readonly runAt: number;
}

export interface CronSchedule extends Jittered {
  readonly kind: "cron";
  /** Five fields, macros already expanded (see cron.ts normalizeCron). */
  readonly cron: string;
  readonly timeZone: string;
  /** How DST repeats and gaps are run; absent means first-occurrence (every job before it). */
  readonly dstPolicy?: DstPolicy;
  readonly startAt?: number;
  readonly endAt?: number;
}

export interface IntervalSchedule extends Jittered {
  readonly kind: "interval";
  readonly everyMs: number;
  /** Firings are anchor + k x every: startAt when given, else the Unix epoch (aligned in UTC). */
  readonly anchor: number;
  readonly startAt?: number;
  readonly endAt?: number;
}

export type Schedule = OnceSchedule | CronSchedule | IntervalSchedule;

/** One instant a schedule fires at. */
export interface Firing {
  /** When the run is due: the firing's instant, plus its offset when the job has a jitter window. */
  readonly at: number;
  /** With jitter: the firing's own instant and the offset added to it. */
  readonly jittered?: { readonly firingAt: number; readonly offsetMs: number };
  /**
   * For cron: the local times it stands for, when DST moved or merged them, or ran them in a
   * fold ("repeated", "second-occurrence"); and the local times a gap skipped just before it
   * that the job's policy does not run.
   */
  readonly dst?: {
    readonly kind: CronFiringKind;
    readonly nominal: number[];
    readonly skipped?: number[];
  };
}

/** Every firing due strictly after `after`, in order; finite for one-off and bounded schedules. */
export function* firingsAfter(schedule: Schedule, after: number): Generator<Firing> {
  const { jitter } = schedule;
  if (!jitter) {
    yield* firingInstantsAfter(schedule, after);
    return;
  }
  // Each firing needs the next one to bound its offset, so the walk looks one ahead.
  let previous: Firing | undefined;
  const settle = (firing: Firing, nextAt: number | undefined): Firing => {
    const offsetMs = jitterOffsetMs(jitter, firing.at, nextAt);
    return { ...firing, at: firing.at + offsetMs, jittered: { firingAt: firing.at, offsetMs } };
  };
  for (const firing of firingInstantsAfter(schedule, jitteredWalkStart(schedule, after, jitter.windowMs))) {
    if (previous) {
      const due = settle(previous, firing.at);
      if (due.at > after) yield due;
    }
    previous = firing;
  }
  if (previous) {
    const due = settle(previous, undefined);
    if (due.at > after) yield due;
  }
}

/**
 * Where a walk for the runs due after `after` must start. A run falls before the next firing,
 * so the first one due after `after` stands for the last firing at or before it, or a later
 * one; and it is less than a window after its firing. A window back is always far enough, but
 * a day's window over a minute cron is 1,440 firings to walk on every sweep: a span that
 * doubles from a minute finds the last firing at or before `after` with a few probes.
 */
function jitteredWalkStart(schedule: Schedule, after: number, windowMs: number): number {
  for (let span = 60_000; span < windowMs; span *= 2) {
    const first = firingInstantsAfter(schedule, after - span).next();
    if (!first.done && first.value.at <= after) return after - span;
  }
  return after - windowMs;
}

/** The firings' own instants (no jitter) strictly after `after`. */
function* firingInstantsAfter(schedule: Schedule, after: number): Generator<Firing> {
  switch (schedule.kind) {
    case "once":
      if (schedule.runAt > after) yield { at: schedule.runAt };
      return;
    case "interval": {
      const from = Math.max(after, (schedule.startAt ?? Number.NEGATIVE_INFINITY) - 1);
      for (let at = nextIntervalFiring(schedule.anchor, schedule.everyMs, from); ; at += schedule.everyMs) {
        if (schedule.endAt !== undefined && at > schedule.endAt) return;
        yield { at };
      }
    }
    case "cron": {
      const zone = zoneOf(schedule.timeZone);
      if (!zone) return;
      const from = Math.max(after, (schedule.startAt ?? Number.NEGATIVE_INFINITY) - 1);
      for (const firing of cronFirings(schedule.cron, zone, from, schedule.endAt, schedule.dstPolicy)) {
        if (schedule.endAt !== undefined && firing.at > schedule.endAt) return;
        const { kind, nominal, skipped } = firing;
        if (kind === "exact" && !skipped) yield { at: firing.at };
        else yield { at: firing.at, dst: { kind, nominal, ...(skipped ? { skipped } : {}) } };
      }
    }
  }
}

/** The first firing strictly after `after`, or undefined when there is none. */
export function nextFiring(schedule: Schedule, after: number): Firing | undefined {
  for (const firing of firingsAfter(schedule, after)) return firing;
  return undefined;
}

/** The first instant a new job runs: its first firing after it was created (one-offs: runAt). */
export function firstRunAt(schedule: Schedule, createdAt: number): number | undefined {
  if (schedule.kind !== "once") return nextFiring(schedule, createdAt - 1)?.at;
  // A one-off may name an instant a little in the past; it still runs (create-job.ts).
  const offset = schedule.jitter ? jitterOffsetMs(schedule.jitter, schedule.runAt, undefined) : 0;
  return schedule.runAt + offset;
}

/** The instant after `after` that needs a run, once the run for `after` exists. */
export function nextRunAfter(schedule: Schedule, after: number): number | undefined {
  return nextFiring(schedule, after)?.at;
}
