/**
 * Instants travel through the API as ISO 8601 UTC strings and through the core as epoch
 * milliseconds. Whole seconds print without a fraction ("2026-11-02T09:00:00Z"), matching the
 * seed API, so run keys stay short and readable.
 */
export function formatInstant(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  return iso.endsWith(".000Z") ? `${iso.slice(0, -5)}Z` : iso;
}

/** Parses an ISO 8601 instant that names its offset; undefined when it is not one. */
export function parseInstant(text: string): number | undefined {
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
