import type { Clock } from "../../lambdas/core/clock";

/** Real time shifted by an offset a test can move, so emulators and scheduler agree on "now". */
export class OffsetClock implements Clock {
  offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
  }
}
