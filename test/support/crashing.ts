import type { SchedulerDeps } from "../../lambdas/core/deps";

/**
 * A copy of the deps in which one port method "crashes" once: it throws where the process
 * would have been killed, after running (`runFirst`) or before. Later calls work: they are the
 * next invocation, or the tick that repairs what the crash left.
 */
export function crashing<D extends SchedulerDeps, K extends "runs" | "queue" | "jobs">(
  deps: D,
  port: K,
  method: string,
  runFirst: boolean,
): D {
  const target = deps[port] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  if (typeof target[method] !== "function") throw new Error(`no method ${port}.${method}`);
  let crashed = false;
  const wrapped = new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop !== method || typeof value !== "function")
        return typeof value === "function" ? value.bind(obj) : value;
      return async (...args: unknown[]) => {
        if (crashed) return value.apply(obj, args);
        crashed = true;
        if (runFirst) await value.apply(obj, args);
        throw new Error(`killed in ${String(port)}.${method}`);
      };
    },
  });
  return { ...deps, [port]: wrapped };
}
