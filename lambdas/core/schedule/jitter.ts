import { createHash } from "node:crypto";

/**
 * An opt-in jitter window (EventBridge Scheduler's flexible window, Temporal's jitter): each
 * firing runs at a whole-second offset inside the window after it, to spread a top-of-the-hour
 * spike over the services the runs call. The offset is drawn from a hash of the job id (the
 * seed) and the firing's instant, so it is the same on every sweep, every retry of a sweep and
 * every preview: the run's instant, and so its run key, are stable.
 *
 * The window is cut short to the gap before the next firing, so a jittered run always comes
 * before the next firing's run: jitter never reorders a job's runs, and never moves one past
 * the next firing.
 */
export interface Jitter {
  readonly windowMs: number;
  /** The job id: offsets differ from job to job, which is what spreads a spike. */
  readonly seed: string;
}

/** The largest window a job may ask for. */
export const MAX_JITTER_MS = 86_400_000;

const SECOND = 1_000;

/** The offset of the firing at `at`, whose next firing is `nextAt` (none: the whole window). */
export function jitterOffsetMs(jitter: Jitter, at: number, nextAt: number | undefined): number {
  const windowMs = nextAt === undefined ? jitter.windowMs : Math.min(jitter.windowMs, nextAt - at);
  const seconds = Math.floor(windowMs / SECOND);
  if (seconds <= 0) return 0;
  const digest = createHash("sha256").update(`${jitter.seed}\u0000${at}`).digest();
  // 48 bits of the hash as a fraction in [0, 1): floor(fraction x seconds) < seconds, so the
  // offset stays strictly inside the window.
  const fraction = digest.readUIntBE(0, 6) / 2 ** 48;
  return Math.floor(fraction * seconds) * SECOND;
}
