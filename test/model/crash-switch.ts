/**
 * A process that dies between two of its calls: once armed with `k`, the k-th call through any
 * wrapped port throws Crash before it reaches the store or the queue, and every call after it
 * in the same step throws too (a dead process makes no more calls). The calls made before it
 * stay made: that is the state a Lambda killed mid-step leaves behind. Armed with a lost
 * answer instead, the k-th call is carried out twice and the caller sees the second answer, as
 * after the SDK's retry of a request whose first answer was lost.
 */
export class Crash extends Error {
  constructor() {
    super("crashed (injected by the model)");
  }
}

/**
 * A call the service refused (a throttle, a 5xx after the SDK's retries): the caller sees an
 * error and goes on; nothing was done.
 */
export class Refusal extends Error {
  constructor() {
    super("refused by the service (injected by the model)");
    this.name = "ServiceUnavailable";
  }
}

export class CrashSwitch {
  private left: number | undefined;
  /** The call the service refuses (its count since the last arm), or undefined. */
  private refusing: number | undefined;
  /** A port method every call of which is refused (that part of a service down), or undefined. */
  private down: string | undefined;
  private dead = false;
  /** The call whose answer is lost (its count since the last arm), or undefined. */
  private losing: number | undefined;
  /** Calls made through the wrapped ports since the last arm. */
  calls = 0;

  arm(afterCalls: number): void {
    this.left = afterCalls;
    this.dead = false;
    this.calls = 0;
  }

  /**
   * The k-th call from now is carried out and its answer lost, and the SDK sends it again with
   * the same input: the caller gets the second answer, which meets the first one's effect (a
   * conditional write refused by its own write, a second copy of a message, a receive whose
   * messages stay hidden). No process dies.
   */
  armLostAnswer(call: number): void {
    this.losing = call;
    this.dead = false;
    this.calls = 0;
  }

  /** The k-th call from now is refused, and nothing else: the process lives on. */
  armRefusal(call: number): void {
    this.refusing = call;
    this.dead = false;
    this.calls = 0;
  }

  /** Every call to `method` (a port's, by name) is refused until disarmed; the rest go through. */
  armOutage(method: string): void {
    this.down = method;
    this.dead = false;
    this.calls = 0;
  }

  disarm(): void {
    this.left = undefined;
    this.losing = undefined;
    this.refusing = undefined;
    this.down = undefined;
    this.dead = false;
  }

  /** Whether the armed crash happened. */
  get crashed(): boolean {
    return this.dead;
  }

  private pass(method: string): void {
    this.calls += 1;
    if (this.dead) throw new Crash();
    if (this.calls === this.refusing || method === this.down) throw new Refusal();
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
          this.pass(String(property));
          const call = () => (value as (...a: unknown[]) => unknown).apply(target, args);
          if (this.calls !== this.losing) return call();
          const first = call();
          // Only an asynchronous call goes over the network; its answer is the one lost.
          return first instanceof Promise ? first.then(call) : first;
        };
      },
    });
  }
}
