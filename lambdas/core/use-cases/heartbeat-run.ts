import { servesTenant, type WorkerCaller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { NotFoundError, StaleFenceError } from "../errors";
import { parseRunId } from "../ids";
import { formatInstant } from "../instant";
import { heartbeatRequest } from "../schemas";
import { parseWith } from "../validation";

/**
 * Extends a lease by its job's lease length from now: in DynamoDB (conditional on the fence
 * and on the lease not having lapsed) and on the delivering message, whose visibility is the
 * lease. A heartbeat with an old fence, or after the lease lapsed, is a StaleFenceError (409):
 * the run may already be someone else's. A run of a tenant the worker does not serve is, to
 * it, a run that does not exist (404), and nothing is written.
 */
export async function heartbeatRun(deps: SchedulerDeps, worker: WorkerCaller, runId: string, body: unknown) {
  const { fence } = parseWith(heartbeatRequest, body);
  const key = parseRunId(runId);
  const job = key ? await deps.jobs.getJob(key.jobId) : undefined;
  if (!key || !job || !servesTenant(worker, job.tenant)) {
    throw new NotFoundError(`run ${runId} not found`, "runId");
  }

  const now = deps.clock.now();
  const leaseExpiresAt = now + job.leaseSeconds * 1000;
  const held = await deps.runs.heartbeatRun(key.jobId, key.scheduledFor, fence, leaseExpiresAt, now);
  if (!held) {
    const run = await deps.runs.getRun(key.jobId, key.scheduledFor);
    if (!run) throw new NotFoundError(`run ${runId} not found`, "runId");
    throw new StaleFenceError(
      `fence ${fence} does not hold a live lease on run ${runId} (fence ${run.fence}, status ${run.status})`,
      "fence",
    );
  }
  if (held.receiptHandle !== undefined) {
    // A second past the lease, so a copy only comes back once the lease has lapsed.
    await deps.queue.extend(held.receiptHandle, job.leaseSeconds + 1).catch((error: unknown) => {
      // The message is gone (the queue lost it): DynamoDB still holds the lease, and the repair
      // pass re-sends the run if the lease lapses.
      deps.log.warn("could not extend the run's message", { runId, error });
    });
  }
  return { runId, fence, leaseExpiresAt: formatInstant(leaseExpiresAt) };
}
