import type { SchedulerDeps } from "../lambdas/core/deps";
import { runTick } from "../lambdas/core/use-cases/tick";

/**
 * Fires the tick every `periodMs`, as EventBridge does in AWS, never two at once. The first
 * tick after a start tells the repair pass that the (memory-only) queue emulator may have lost
 * messages, so every unfinished written run is re-sent straight away: the SQS journal
 * (sqs-journal.ts, decision 0051) restores what was accepted, and this covers a send whose
 * journal line a kill cut off. A copy that turns out to be one too many is dropped by the lease
 * step.
 */
export function startTicker(
  deps: SchedulerDeps,
  periodMs: number,
  print: (line: string) => void = console.log,
): { stop(): Promise<void> } {
  let stopped = false;
  let deadLetters = 0;
  let first = true;
  // Counts the ticks for their turns, as the cloud's rules name them (decision 0056).
  let ticks = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const loop = () => {
    if (stopped) return;
    const turn = ticks++ % deps.settings.sweepEveryTicks;
    running = runTick(deps, { queueWasReset: first, turn })
      .then((result) => {
        first = false;
        // The local stand-in for the dead-letter alarm: say when the depth changes.
        if (result.deadLetters !== deadLetters) {
          deadLetters = result.deadLetters;
          print(`[jobsched] dead letters: ${deadLetters} (GET /api/v1/dead-letters, jobsched dlq list)`);
        }
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
