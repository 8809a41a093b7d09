import { DateTime, IANAZone } from "luxon";

/**
 * Local wall time in an IANA zone, and the default DST rule (`first-occurrence`) that turns a
 * local time into one instant:
 *
 * - a local time that exists once is that instant;
 * - a local time that occurs twice (clocks go back) is its first occurrence;
 * - a local time skipped by a jump forward is the first valid instant after the gap, which is
 *   the instant of the jump itself (01:30 in Europe/London on 2026-03-29 is 02:00 BST = 01:00Z).
 *
 * The other policies a cron job may choose (dst-policy.ts) differ in one case each:
 * `every-occurrence` runs a twice-occurring time at both instants, `skip-gap` does not run a
 * skipped time at all.
 *
 * "Naive" local times are milliseconds on a timeline with no offsets at all: the wall clock
 * read as if it were UTC. Zone rules come from the runtime's ICU data through luxon.
 */
export type LocalKind = "exact" | "repeated" | "moved";

export interface ResolvedLocal {
  readonly at: number;
  readonly kind: LocalKind;
}

const MINUTE = 60_000;
/** Wider than any offset change a zone has made in one step, so both sides are sampled. */
const SAMPLE_SPAN = 26 * 3_600_000;

const zones = new Map<string, IANAZone>();

export function zoneOf(name: string): IANAZone | undefined {
  let zone = zones.get(name);
  if (!zone) {
    if (!IANAZone.isValidZone(name)) return undefined;
    zone = IANAZone.create(name);
    zones.set(name, zone);
  }
  return zone;
}

/** Offset from UTC in milliseconds at an instant. */
export function offsetAt(zone: IANAZone, at: number): number {
  return zone.offset(at) * MINUTE;
}

/** The offsets in force within a day either side of `around`. */
function nearbyOffsets(zone: IANAZone, around: number): number[] {
  return [...new Set([around - SAMPLE_SPAN, around, around + SAMPLE_SPAN].map((t) => offsetAt(zone, t)))];
}

/** The smallest offset in force near an instant: no local time before at + this maps past it. */
export function minOffsetNear(zone: IANAZone, at: number): number {
  return Math.min(...nearbyOffsets(zone, at));
}

/** The largest offset in force near an instant: no local time after at + this maps before it. */
export function maxOffsetNear(zone: IANAZone, at: number): number {
  return Math.max(...nearbyOffsets(zone, at));
}

/** Every instant whose local time is `naive`, earliest first: none in a gap, two in a fold. */
export function occurrencesOf(zone: IANAZone, naive: number): number[] {
  const valid = nearbyOffsets(zone, naive)
    .map((o) => naive - o)
    .filter((at) => naive - offsetAt(zone, at) === at);
  return [...new Set(valid)].sort((a, b) => a - b);
}

/** Applies the default DST rule to a naive local time. */
export function resolveLocal(zone: IANAZone, naive: number): ResolvedLocal {
  const valid = occurrencesOf(zone, naive);
  if (valid.length > 0) {
    return { at: valid[0] as number, kind: valid.length > 1 ? "repeated" : "exact" };
  }
  const offsets = nearbyOffsets(zone, naive);
  // In a gap: read with the larger offset the time falls before the jump, with the smaller
  // after it. The first instant carrying the new offset is the answer.
  let before = naive - Math.max(...offsets);
  let after = naive - Math.min(...offsets);
  const newOffset = offsetAt(zone, after);
  while (after - before > 1) {
    const middle = Math.floor((before + after) / 2);
    if (offsetAt(zone, middle) === newOffset) after = middle;
    else before = middle;
  }
  return { at: after, kind: "moved" };
}

/** An instant as local ISO time with its offset, e.g. 2026-03-29T02:00:00+01:00. */
export function formatLocal(zoneName: string, at: number): string {
  // toISO() is null only for an invalid DateTime; the zone was validated on the way in.
  return DateTime.fromMillis(at, { zone: zoneName }).toISO({ suppressMilliseconds: true }) as string;
}

/** A naive local time as ISO without offset, e.g. 2026-03-29T01:30:00. */
export function formatNaive(naive: number): string {
  return DateTime.fromMillis(naive, { zone: "UTC" }).toISO({
    suppressMilliseconds: true,
    includeOffset: false,
  }) as string;
}
