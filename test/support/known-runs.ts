import { seedOf } from "../../lambdas/core/delivery";
import { seededRun } from "../../lambdas/core/lifecycle/creation";
import type { Run } from "../../lambdas/core/run";
import type { MemoryRunQueue, MemoryRunStore } from "./memory-ports";

/**
 * Every run as the scheduler knows it (decision 0051): the written ones, and each run made but
 * not written that a message sent (or waiting to be received) carries, as the pending run its
 * seed stands for. A test that asks "is there a pending run" means this: the item is written
 * first by the run's lease, or by the step that ends it unstarted.
 */
export function knownRuns(deps: { readonly runs: MemoryRunStore; readonly queue: MemoryRunQueue }): Run[] {
  const written = [...deps.runs.runs.values()].map(({ receiptHandle: _, ...run }) => run as Run);
  const key = (run: Pick<Run, "jobId" | "scheduledFor">) => `${run.jobId}@${run.scheduledFor}`;
  const known = new Map(written.map((run) => [key(run), run]));
  const messages = [
    ...deps.queue.sent.map((s) => s.message),
    ...deps.queue.ready.flatMap((r) => (r.message ? [r.message] : [])),
  ];
  for (const message of messages) {
    const seed = seedOf(message, 0, 0);
    if (seed && !known.has(key(seed))) known.set(key(seed), seededRun(seed));
  }
  return [...known.values()];
}

/** The job's runs as the scheduler knows them, oldest first. */
export function knownRunsOf(
  deps: { readonly runs: MemoryRunStore; readonly queue: MemoryRunQueue },
  jobId: string,
): Run[] {
  return knownRuns(deps)
    .filter((run) => run.jobId === jobId)
    .sort((a, b) => a.scheduledFor - b.scheduledFor);
}
