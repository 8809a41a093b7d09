import { DstPolicy } from "@jobsched/contract";
import { CronExpressionParser } from "cron-parser";
import type { IANAZone } from "luxon";
import { mergeListRepeats } from "./cron-lists";
import { type LocalKind, maxOffsetNear, minOffsetNear, occurrencesOf, resolveLocal } from "./zone-time";

/**
 * Cron schedules, evaluated on local wall time. cron-parser walks a naive timeline (the zone's
 * wall clock read as UTC, where no DST exists), so its answers are the matching local times;
 * zone-time.ts then applies the job's DST policy to each. This replaces cron-parser's own zone
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

export type CronFiringKind = LocalKind | "second-occurrence";

export interface CronFiring {
  readonly at: number;
  /** The local times the expression named that run at this instant (several when merged). */
  readonly nominal: number[];
  /**
   * `repeated`: the first pass of a local time that occurs twice; `second-occurrence`: its second
   * pass (every-occurrence only); `moved`: run at the end of a gap that skipped it.
   */
  readonly kind: CronFiringKind;
  /** Local times a gap skipped just before this firing that the policy did not run (skip-gap). */
  readonly skipped?: number[];
}

/**
 * The firings of a cron expression in a zone strictly after `after`, in order, one per
 * instant, under a DST policy: local times that the policy sends to the same instant run once
 * ("merged"). Under every-occurrence a repeated time's second pass comes after later local
 * times' first passes, so firings wait in a short buffer, ordered, until no later local time
 * can come before them.
 */
export function* cronFirings(
  fields: string,
  zone: IANAZone,
  after: number,
  until?: number,
  policy: DstPolicy = DstPolicy.FirstOccurrence,
): Generator<CronFiring> {
  // No local time earlier than after + (smallest nearby offset) can map past `after`.
  const start = after + minOffsetNear(zone, after);
  const iterator = CronExpressionParser.parse(fields, {
    tz: "UTC",
    currentDate: new Date(start),
    // Local times run up to 14 h ahead of UTC: stop cron-parser a little past `until`.
    ...(until === undefined ? {} : { endDate: new Date(until + 15 * 3_600_000) }),
  });
  const pending: CronFiring[] = []; // ordered by `at`, distinct instants
  let skipped: number[] = [];
  for (;;) {
    let naive: number;
    try {
      naive = iterator.next().getTime();
    } catch {
      break; // past `until` (cron-parser's endDate)
    }
    // Every later local time maps to at least naive - (largest offset): earlier ones are final.
    const settled = naive - maxOffsetNear(zone, naive);
    while (pending.length > 0 && (pending[0] as CronFiring).at < settled) yield pending.shift() as CronFiring;

    for (const candidate of firingsOfLocal(zone, naive, policy)) {
      if (candidate.at <= after) continue; // an occurrence that has passed
      if (candidate.kind === "skipped") {
        skipped.push(naive);
        continue;
      }
      const firing = skipped.length > 0 ? { ...candidate, skipped } : candidate;
      skipped = [];
      insertMerging(pending, firing);
    }
  }
  yield* pending;
}

/** The firings one matching local time makes under a policy; `skipped` marks one the policy drops. */
function firingsOfLocal(
  zone: IANAZone,
  naive: number,
  policy: DstPolicy,
): (CronFiring | { readonly at: number; readonly kind: "skipped" })[] {
  const occurrences = occurrencesOf(zone, naive);
  const [first, second] = occurrences;
  if (first === undefined) {
    const { at } = resolveLocal(zone, naive); // the end of the gap
    return [policy === DstPolicy.SkipGap ? { at, kind: "skipped" } : { at, nominal: [naive], kind: "moved" }];
  }
  if (second === undefined) return [{ at: first, nominal: [naive], kind: "exact" }];
  const firstPass = { at: first, nominal: [naive], kind: "repeated" as const };
  return policy === DstPolicy.EveryOccurrence
    ? [firstPass, { at: second, nominal: [naive], kind: "second-occurrence" }]
    : [firstPass];
}

/** Adds a firing to an ordered list; one at an instant already listed merges into it. */
function insertMerging(pending: CronFiring[], firing: CronFiring): void {
  let index = pending.length;
  while (index > 0 && (pending[index - 1] as CronFiring).at > firing.at) index -= 1;
  const same = pending[index - 1];
  if (same && same.at === firing.at) {
    const skipped = [...(same.skipped ?? []), ...(firing.skipped ?? [])];
    pending[index - 1] = {
      at: same.at,
      nominal: [...same.nominal, ...firing.nominal],
      kind: "moved",
      ...(skipped.length > 0 ? { skipped } : {}),
    };
    return;
  }
  pending.splice(index, 0, firing);
}
