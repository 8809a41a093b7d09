import { LAMBDA_RESPONSE_LIMIT_BYTES } from "./aws-limits";

/**
 * The lease response's byte budget. A lease carries its job's payload (up to 256 KiB of JSON),
 * and Lambda refuses a response over LAMBDA_RESPONSE_LIMIT_BYTES: the whole request then fails
 * after its fences were raised, and every run in it lapses and loses an attempt. So the lease
 * step counts each run's bytes before leasing it, and runs that do not fit go back to their
 * lane untouched for the next request.
 */

/** What one lease adds besides its payload, at most: ids, type, instants, numbers, names. */
const LEASE_OVERHEAD_BYTES = 1_024;

/** Room left for the API Gateway result around the body (status, headers) and a margin. */
export const LEASE_RESPONSE_BUDGET_BYTES = LAMBDA_RESPONSE_LIMIT_BYTES - 64 * 1024;

/**
 * The bytes a lease with this payload adds to the response as Lambda counts it: the body is
 * JSON escaped inside the result's JSON string, so quotes and backslashes count twice.
 */
export function leaseResponseBytes(payload: unknown): number {
  if (payload === undefined) return LEASE_OVERHEAD_BYTES;
  const text = JSON.stringify(payload);
  // Escaping JSON text as a string adds a backslash before each quote and backslash and the
  // two enclosing quotes: JSON text has no raw control characters or lone surrogates left to
  // escape. Counted here rather than by stringifying a 256 KiB payload a second time.
  let escapes = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) escapes += 1;
  }
  return Buffer.byteLength(text, "utf8") + escapes + LEASE_OVERHEAD_BYTES;
}

/** Takes items in order while their bytes fit what is left; the rest do not fit. */
export function withinBudget<T>(
  items: readonly T[],
  bytesOf: (item: T) => number,
  budget: { left: number },
): { fits: T[]; overflow: T[] } {
  const fits: T[] = [];
  const overflow: T[] = [];
  for (const item of items) {
    const bytes = bytesOf(item);
    if (bytes <= budget.left) {
      budget.left -= bytes;
      fits.push(item);
    } else overflow.push(item);
  }
  return { fits, overflow };
}
