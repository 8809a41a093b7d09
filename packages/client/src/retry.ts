import { type BackoffPolicy, type Random, retryDelayMs } from "@jobsched/contract";
import type { JsonResponse } from "./transport.js";

/**
 * When a call is tried again. A 429 is always retried: the API refused it before doing anything
 * (a quota, the gateway's throttle). A 5xx or a network failure is retried only for a call that
 * is safe to repeat (reads, cancel, pause, resume, an update, a create with an idempotency key):
 * a create without a key or a manual trigger may have taken effect before the failure, and
 * repeating it would make a second job or run. Waits back off with equal jitter (the contract's
 * retryDelayMs) and are never shorter than the answer's Retry-After; a Retry-After longer than
 * `maxRetryAfterSeconds` is handed back to the caller as the error, which carries it.
 */
export interface RetryOptions {
  /** Tries in all, the first included (default 4; 1 turns retries off). */
  readonly attempts?: number;
  /** The backoff between tries (default 200 ms doubling up to 5 s, with jitter). */
  readonly backoff?: BackoffPolicy;
  /** The longest Retry-After waited out (default 20 s). */
  readonly maxRetryAfterSeconds?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = {
  attempts: 4,
  backoff: { baseMs: 200, capMs: 5_000 },
  maxRetryAfterSeconds: 20,
};

export interface RetryEnvironment {
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random: Random;
}

/** Seconds from a Retry-After header (seconds or an HTTP date), or undefined. */
export function retryAfterSecondsOf(headers: Headers | undefined, now = Date.now()): number | undefined {
  const value = headers?.get("retry-after");
  if (value === null || value === undefined || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/**
 * Sends with `send` until an answer that is not to be retried, or the tries run out: then the
 * last answer (or the last network error, thrown). `safeToRepeat` says whether 5xx and network
 * failures may be retried.
 */
export async function withRetries(
  send: () => Promise<JsonResponse>,
  safeToRepeat: boolean,
  options: RetryOptions,
  environment: RetryEnvironment,
  signal?: AbortSignal,
): Promise<JsonResponse> {
  const attempts = Math.max(1, options.attempts ?? DEFAULT_RETRY.attempts);
  const backoff = options.backoff ?? DEFAULT_RETRY.backoff;
  const longestWait = options.maxRetryAfterSeconds ?? DEFAULT_RETRY.maxRetryAfterSeconds;
  for (let attempt = 1; ; attempt++) {
    let answer: JsonResponse | undefined;
    let failure: unknown;
    try {
      answer = await send();
    } catch (error) {
      if (signal?.aborted) throw error;
      failure = error;
    }
    const retryable =
      answer === undefined ? safeToRepeat : answer.status === 429 || (answer.status >= 500 && safeToRepeat);
    const retryAfter = retryAfterSecondsOf(answer?.headers);
    if (!retryable || attempt >= attempts || (retryAfter !== undefined && retryAfter > longestWait)) {
      if (answer === undefined) throw failure;
      return answer;
    }
    const wait = Math.max(retryDelayMs(attempt, backoff, environment.random), (retryAfter ?? 0) * 1000);
    await environment.sleep(wait, signal);
  }
}

/** setTimeout as a promise that an abort cuts short (rejecting with the signal's reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}
