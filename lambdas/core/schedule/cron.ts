import { CronExpressionParser } from "cron-parser";
import type { IANAZone } from "luxon";
import { mergeListRepeats } from "./cron-lists";
import { type LocalKind, minOffsetNear, resolveLocal } from "./zone-time";

/**
 * Cron schedules, evaluated on local wall time. cron-parser walks a naive timeline (the zone's
 * wall clock read as UTC, where no DST exists), so its answers are the matching local times;
 * zone-time.ts then applies the DST rule to each. This replaces cron-parser's own zone
 * handling, which runs a time skipped by spring-forward an hour late (01:30 in Europe/London
 * on 2026-03-29 at 02:30 BST instead of 02:00 BST).
 *
 * Accepted: five fields (minute hour day-of-month month day-of-week) with names (JAN, MON),
 * ranges, steps, lists, L and #, or one of the macros below. Sunday is 0 or 7, and a list may
 * name a value twice (`SUN,7`), as in Vixie cron (cron-lists.ts). When both day fields are
 * restricted a day matching either runs (classic cron). A seconds field is refused: runs are
 * scheduled to the minute end to end.
 */
export const CRON_MACROS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

export class CronSyntaxError extends Error {}

/** Checks an expression; returns its five-field form or throws CronSyntaxError saying why. */
export function normalizeCron(expression: string): string {
  const trimmed = expression.trim().replace(/\s+/g, " ");
  const expanded = CRON_MACROS[trimmed.toLowerCase()] ?? trimmed;
  const count = expanded.split(" ").length;
  if (trimmed.startsWith("@") && !CRON_MACROS[trimmed.toLowerCase()]) {
    throw new CronSyntaxError(`unknown macro ${trimmed}; use one of ${Object.keys(CRON_MACROS).join(" ")}`);
  }
  if (count === 6) throw new CronSyntaxError("a seconds field is not supported; use five fields");
  if (count !== 5)
    throw new CronSyntaxError(`expected five fields (minute hour day month weekday), got ${count}`);
  if (/(^|[\s,])H(?=$|[\s,/(])/i.test(expanded)) {
    throw new CronSyntaxError("hashed values (H) are not supported");
  }
  // Lists that name a value twice (SUN,7; 1-5,3) as the sets Vixie cron reads them as.
  const fields = mergeListRepeats(expanded);
  try {
    const iterator = CronExpressionParser.parse(fields, { tz: "UTC", currentDate: 0 });
    iterator.next(); // an expression that can never match fails here
  } catch (error) {
    throw new CronSyntaxError((error as Error).message);
  }
  return fields;
}

export interface CronFiring {
  readonly at: number;
  /** The local times the expression named that run at this instant (several when merged). */
  readonly nominal: number[];
  readonly kind: LocalKind;
}

/**
 * The firings of a cron expression in a zone strictly after `after`, in order, one per
 * instant: local times that the DST rule sends to the same instant run once ("merged").
 */
export function* cronFirings(
  fields: string,
  zone: IANAZone,
  after: number,
  until?: number,
): Generator<CronFiring> {
  // No local time earlier than after + (smallest nearby offset) can map past `after`.
  const start = after + minOffsetNear(zone, after);
  const iterator = CronExpressionParser.parse(fields, {
    tz: "UTC",
    currentDate: new Date(start),
    // Local times run up to 14 h ahead of UTC: stop cron-parser a little past `until`.
    ...(until === undefined ? {} : { endDate: new Date(until + 15 * 3_600_000) }),
  });
  let pending: CronFiring | undefined;
  for (;;) {
    let naive: number;
    try {
      naive = iterator.next().getTime();
    } catch {
      break; // past `until` (cron-parser's endDate)
    }
    const resolved = resolveLocal(zone, naive);
    if (resolved.at <= after) continue; // a repeated time whose first occurrence has passed
    if (pending && resolved.at === pending.at) {
      pending = { ...pending, nominal: [...pending.nominal, naive], kind: "moved" };
      continue;
    }
    if (pending) yield pending;
    pending = { at: resolved.at, nominal: [naive], kind: resolved.kind };
  }
  if (pending) yield pending;
}
