import type { Clock } from "../core/clock";

/** The wall clock, for production. The core never reads it directly: it is handed a Clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};
