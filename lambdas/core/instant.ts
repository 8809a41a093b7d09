import { z } from "zod";

/**
 * Instants travel through the API as ISO 8601 UTC strings and through the core as epoch
 * milliseconds. Whole seconds print without a fraction ("2026-11-02T09:00:00Z"), matching the
 * seed API, so run keys stay short and readable.
 */
export function formatInstant(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  return iso.endsWith(".000Z") ? `${iso.slice(0, -5)}Z` : iso;
}

const isoInstant = z.iso.datetime({ offset: true });

/**
 * Parses an ISO 8601 date-time that names its offset ("Z" or "+01:00"); undefined for anything
 * else, including impossible dates such as 2026-02-30 that Date.parse would quietly roll over.
 */
export function parseInstant(text: string): number | undefined {
  return isoInstant.safeParse(text).success ? Date.parse(text) : undefined;
}
