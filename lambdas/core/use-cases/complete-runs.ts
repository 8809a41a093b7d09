import { batchOf, forEachItem, type ItemOutcome, withoutRunId } from "../batch";
import type { WorkerCaller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { parseWith } from "../validation";
import { type CompletionResult, completeRun } from "./complete-run";

const completeBatch = batchOf("completions");

/**
 * Records many completions in one call (`{ completions: [{ runId, fence, result, ... }] }`),
 * each exactly as the one-run route would (the same fence rules, repeats answered the same
 * way), with its own outcome. The delivering messages of the recorded outcomes are deleted
 * together afterwards, one batched call per lane instead of one per run; a message that
 * cannot be deleted only comes back to a lease step that finds its run finished and drops it.
 */
export async function completeRuns(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  body: unknown,
): Promise<Array<ItemOutcome<CompletionResult>>> {
  const { completions } = parseWith(completeBatch, body);
  const handles: string[] = [];
  const outcomes = await forEachItem(completions as unknown[], (runId, item) =>
    completeRun(deps, worker, runId, withoutRunId(item), async (_deps, _runId, receiptHandle) => {
      if (receiptHandle !== undefined) handles.push(receiptHandle);
    }),
  );
  const failed = await deps.queue.deleteBatch(handles);
  if (failed.length > 0)
    deps.log.warn("could not delete some completed runs' messages", { count: failed.length });
  return outcomes;
}
