/**
 * Retry backoff: the n-th retry waits min(cap, base x 2^(n-1)) with "equal jitter": half of
 * that for certain plus a random part of up to the other half. Equal rather than full jitter
 * keeps a meaningful minimum wait (a failing dependency gets at least 5 s, 10 s, 20 s... of
 * rest) while still spreading a burst of failures over time. Defaults: base 10 s, cap 1 h.
 */
export interface BackoffPolicy {
  readonly baseMs: number;
  readonly capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 10_000, capMs: 3_600_000 };

/** A source of uniform random numbers in [0, 1); Math.random in production, fixed in tests. */
export type Random = () => number;

/** Milliseconds to wait before retry number `retry` (1 for the first retry). */
export function retryDelayMs(retry: number, policy: BackoffPolicy, random: Random): number {
  const exponent = Math.max(0, Math.floor(retry) - 1);
  // 2^exponent overflows to Infinity for huge retry counts; min() with the cap still holds.
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  const half = ceiling / 2;
  return Math.round(half + random() * half);
}
