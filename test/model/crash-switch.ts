/**
 * A process that dies between two of its calls: once armed with `k`, the k-th call through any
 * wrapped port throws Crash before it reaches the store or the queue, and every call after it
 * in the same step throws too (a dead process makes no more calls). The calls made before it
 * stay made: that is the state a Lambda killed mid-step leaves behind.
 */
export class Crash extends Error {
  constructor() {
    super("crashed (injected by the model)");
  }
}

export class CrashSwitch {
  private left: number | undefined;
  private dead = false;
  /** Calls made through the wrapped ports since the last arm. */
  calls = 0;

  arm(afterCalls: number): void {
    this.left = afterCalls;
    this.dead = false;
    this.calls = 0;
  }

  disarm(): void {
    this.left = undefined;
    this.dead = false;
  }

  /** Whether the armed crash happened. */
  get crashed(): boolean {
    return this.dead;
  }

  private pass(): void {
    this.calls += 1;
    if (this.dead) throw new Crash();
    if (this.left === undefined) return;
    this.left -= 1;
    if (this.left <= 0) {
      this.dead = true;
      throw new Crash();
    }
  }

  /** The port with every method call passing through the switch first. */
  wrap<T extends object>(port: T): T {
    return new Proxy(port, {
      get: (target, property, receiver) => {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          this.pass();
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }
}
