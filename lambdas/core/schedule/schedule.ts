import { cronFirings } from "./cron";
import { nextIntervalFiring } from "./interval";
import { type LocalKind, zoneOf } from "./zone-time";

/**
 * When a job runs. All instants are epoch milliseconds; `startAt` and `endAt` bound recurring
 * schedules (both inclusive).
 */
export interface OnceSchedule {
  readonly kind: "once";
  readonly runAt: number;
}

export interface CronSchedule {
  readonly kind: "cron";
  /** Five fields, macros already expanded (see cron.ts normalizeCron). */
  readonly cron: string;
  readonly timeZone: string;
  readonly startAt?: number;
  readonly endAt?: number;
}

export interface IntervalSchedule {
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
  readonly at: number;
  /** For cron: the local times it stands for, when DST moved or merged them ("repeated" for a fold). */
  readonly dst?: { readonly kind: Exclude<LocalKind, "exact">; readonly nominal: number[] };
}

/** Every firing strictly after `after`, in order; finite for one-off and bounded schedules. */
export function* firingsAfter(schedule: Schedule, after: number): Generator<Firing> {
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
      for (const firing of cronFirings(schedule.cron, zone, from, schedule.endAt)) {
        if (schedule.endAt !== undefined && firing.at > schedule.endAt) return;
        const merged = firing.nominal.length > 1;
        const kind = merged ? "moved" : firing.kind;
        yield kind === "exact"
          ? { at: firing.at }
          : { at: firing.at, dst: { kind, nominal: firing.nominal } };
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
  return schedule.kind === "once" ? schedule.runAt : nextFiring(schedule, createdAt - 1)?.at;
}

/** The instant after `after` that needs a run, once the run for `after` exists. */
export function nextRunAfter(schedule: Schedule, after: number): number | undefined {
  return nextFiring(schedule, after)?.at;
}
