import type { SchedulerDeps } from "../deps";
import { NotFoundError, StaleFenceError } from "../errors";
import { parseRunId } from "../ids";
import { RunStatus } from "../run";
import { completeRequest } from "../schemas";
import { parseWith } from "../validation";

export interface CompletionResult {
  readonly runId: string;
  readonly status: "succeeded" | "failed";
}

/**
 * Records a worker's outcome. Only the holder of the run's current fence may complete it: a
 * worker that paused past its lease and was replaced gets a StaleFenceError (409) and changes
 * nothing. Then the delivering message is deleted and, after a job's last run, the job is marked
 * completed.
 */
export async function completeRun(
  deps: SchedulerDeps,
  runId: string,
  body: unknown,
): Promise<CompletionResult> {
  const request = parseWith(completeRequest, body);
  const key = parseRunId(runId);
  if (!key) throw new NotFoundError(`run ${runId} not found`, "runId");

  const now = deps.clock.now();
  const status = request.result === "succeeded" ? RunStatus.Succeeded : RunStatus.Failed;
  const finished = await deps.runs.finishRun(key.jobId, key.scheduledFor, request.fence, {
    status,
    error: request.error,
    now,
  });
  if (!finished) {
    const run = await deps.runs.getRun(key.jobId, key.scheduledFor);
    if (!run) throw new NotFoundError(`run ${runId} not found`, "runId");
    throw new StaleFenceError(
      `fence ${request.fence} does not hold the lease of run ${runId} (fence ${run.fence}, status ${run.status})`,
      "fence",
    );
  }

  if (finished.receiptHandle !== undefined) {
    // If the handle is stale (the queue lost the message), the lease step drops any copy later.
    await deps.queue.delete(finished.receiptHandle).catch((error: unknown) => {
      deps.log.warn("could not delete the run's message", { runId, error });
    });
  }

  // Only the job's last run ends it; completeJob is conditional on the job still being active.
  if (finished.final) await deps.jobs.completeJob(key.jobId, now);

  deps.log.info("run completed", { runId, status, fence: request.fence });
  return { runId, status };
}
