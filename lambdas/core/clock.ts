/**
 * The only way the core learns the time. Handlers pass the system clock; tests pass a fake.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Waits `ms` milliseconds (a fake clock just moves on). */
  sleep(ms: number): Promise<void>;
}

/** A clock that always answers the same instant, moved only by `set` or `advance`. */
export class FixedClock implements Clock {
  constructor(private current: number) {}

  now(): number {
    return this.current;
  }

  set(epochMs: number): void {
    this.current = epochMs;
  }

  advance(ms: number): void {
    this.current += ms;
  }

  async sleep(ms: number): Promise<void> {
    this.current += Math.max(0, ms);
  }
}
