import { DstPolicy } from "@jobsched/contract";
import { durationMs } from "../duration";
import { ValidationError } from "../errors";
import { parseInstant } from "../instant";
import { type CronSyntaxError, normalizeCron } from "./cron";
import { type IntervalSyntaxError, parseEvery } from "./interval";
import { MAX_JITTER_MS } from "./jitter";
import { firstRunAt, type Schedule } from "./schedule";
import { zoneOf } from "./zone-time";

/**
 * A schedule as callers write it (the job API's body, the preview's query), already shaped by
 * zod, turned into a Schedule. Every refusal names its field.
 */
export interface ScheduleFields {
  readonly runAt?: string | undefined;
  readonly cron?: string | undefined;
  readonly timeZone?: string | undefined;
  readonly dstPolicy?: DstPolicy | undefined;
  /** "15m", "2h", "PT15M"... */
  readonly every?: string | undefined;
  /** The field name `every` came from, for error messages ("interval.every" or "interval"). */
  readonly everyField?: string;
  readonly startAt?: string | undefined;
  readonly endAt?: string | undefined;
  /** A jitter window (seconds or ISO 8601) and the job id that seeds its offsets. */
  readonly jitter?: number | string | undefined;
  readonly jitterSeed?: string | undefined;
}

export const DEFAULT_TIME_ZONE = "UTC";

function instant(text: string | undefined, field: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseInstant(text);
  if (ms === undefined) throw new ValidationError(`${field}: not an ISO 8601 instant`, field);
  return ms;
}

export function scheduleFromFields(fields: ScheduleFields): Schedule {
  const schedule = unjitteredSchedule(fields);
  if (fields.jitter === undefined) return schedule;
  const windowMs = durationMs(fields.jitter, "jitter");
  if (windowMs > MAX_JITTER_MS) throw new ValidationError("jitter: must be at most one day (P1D)", "jitter");
  if (fields.jitterSeed === undefined) {
    throw new ValidationError("jobId: needed with jitter: each job's offsets are drawn from its id", "jobId");
  }
  return { ...schedule, jitter: { windowMs, seed: fields.jitterSeed } };
}

function unjitteredSchedule(fields: ScheduleFields): Schedule {
  const everyField = fields.everyField ?? "interval";
  const given = [
    ["runAt", fields.runAt],
    ["cron", fields.cron],
    [everyField, fields.every],
  ].filter(([, value]) => value !== undefined);
  if (given.length !== 1) {
    const field = given[1]?.[0] ?? "runAt";
    throw new ValidationError(`${field}: give exactly one of runAt, cron or interval`, field);
  }

  const timeZone = fields.timeZone ?? DEFAULT_TIME_ZONE;
  if (!zoneOf(timeZone)) {
    throw new ValidationError(
      `timeZone: "${timeZone}" is not an IANA time zone such as Europe/London`,
      "timeZone",
    );
  }
  const startAt = instant(fields.startAt, "startAt");
  const endAt = instant(fields.endAt, "endAt");

  if (fields.runAt !== undefined) {
    for (const [field, value] of [
      ["timeZone", fields.timeZone],
      ["dstPolicy", fields.dstPolicy],
      ["startAt", startAt],
      ["endAt", endAt],
    ] as const) {
      if (value !== undefined) {
        throw new ValidationError(`${field}: applies to cron and interval schedules only`, field);
      }
    }
    return { kind: "once", runAt: instant(fields.runAt, "runAt") as number };
  }

  if (startAt !== undefined && endAt !== undefined && endAt <= startAt) {
    throw new ValidationError("endAt: must be after startAt", "endAt");
  }
  const bounds = { ...(startAt === undefined ? {} : { startAt }), ...(endAt === undefined ? {} : { endAt }) };

  if (fields.cron !== undefined) {
    // The default is not stored: a job without the field and one that names it run the same.
    const dst =
      fields.dstPolicy === undefined || fields.dstPolicy === DstPolicy.FirstOccurrence
        ? {}
        : { dstPolicy: fields.dstPolicy };
    try {
      return { kind: "cron", cron: normalizeCron(fields.cron), timeZone, ...dst, ...bounds };
    } catch (error) {
      throw new ValidationError(`cron: ${(error as CronSyntaxError).message}`, "cron");
    }
  }

  if (fields.dstPolicy !== undefined) {
    throw new ValidationError(
      "dstPolicy: applies to cron schedules only (intervals are computed in UTC)",
      "dstPolicy",
    );
  }
  try {
    const everyMs = parseEvery(fields.every as string);
    return { kind: "interval", everyMs, anchor: startAt ?? 0, ...bounds };
  } catch (error) {
    throw new ValidationError(`${everyField}: ${(error as IntervalSyntaxError).message}`, everyField);
  }
}

/** Refuses a recurring schedule that has no run left after `now` (for example endAt in the past). */
export function requireFutureRun(schedule: Schedule, now: number): number {
  const first = firstRunAt(schedule, now);
  if (first === undefined) {
    // One-off schedules always have their runAt; only bounded recurring ones can run out.
    const field = schedule.kind === "cron" ? "cron" : "endAt";
    throw new ValidationError(`${field}: the schedule has no run after now`, field);
  }
  return first;
}
