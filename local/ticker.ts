import type { SchedulerDeps } from "../lambdas/core/deps";
import { runTick } from "../lambdas/core/use-cases/tick";

/**
 * Fires the tick every `periodMs`, as EventBridge does in AWS, never two at once. The first
 * tick after a start tells the repair pass that the (memory-only) queue emulator lost all its
 * messages, so every unfinished run is re-sent straight away.
 */
export function startTicker(deps: SchedulerDeps, periodMs: number): { stop(): Promise<void> } {
  let stopped = false;
  let first = true;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const loop = () => {
    if (stopped) return;
    running = runTick(deps, { queueWasReset: first })
      .then(() => {
        first = false;
      })
      .catch((error: unknown) =>
        deps.log.error("tick failed; retrying next period", { error: String(error) }),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, periodMs);
      });
  };
  loop();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
