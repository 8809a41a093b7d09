/**
 * An HTTP Retry-After (RFC 9110): delay seconds, or an HTTP date. The seconds to wait from
 * `now`, or undefined when absent or unreadable; never negative.
 */
export function retryAfterSeconds(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[A-Za-z]/.test(text)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}
