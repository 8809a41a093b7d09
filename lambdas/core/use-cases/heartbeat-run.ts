import type { HeartbeatResult } from "@jobsched/contract";
import { heartbeatRequest } from "@jobsched/contract";
import { batchOf, forEachItem, type ItemOutcome, withoutRunId } from "../batch";
import { servesTenant, type WorkerCaller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { NotFoundError, StaleFenceError } from "../errors";
import { parseRunId } from "../ids";
import { formatInstant } from "../instant";
import type { Job } from "../job";
import { parseWith } from "../validation";

export type { HeartbeatResult };

/**
 * Extends a lease by its job's lease length from now: in DynamoDB (conditional on the fence
 * and on the lease not having lapsed) and on the delivering message, whose visibility is the
 * lease. A heartbeat with an old fence, or after the lease lapsed, is a StaleFenceError (409):
 * the run may already be someone else's. A run of a tenant the worker does not serve is, to
 * it, a run that does not exist (404), and nothing is written.
 */
export async function heartbeatRun(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  runId: string,
  body: unknown,
): Promise<HeartbeatResult> {
  const key = parseRunId(runId);
  const job = key ? await deps.jobs.getJob(key.jobId) : undefined;
  const extension: Extension[] = [];
  const result = await heartbeatOne(deps, worker, runId, body, job, extension);
  await extend(deps, extension);
  return result;
}

const heartbeatBatch = batchOf("heartbeats");

/**
 * Many heartbeats in one call (`{ heartbeats: [{ runId, fence }] }`), each with its own
 * outcome and the same rules as heartbeatRun; their jobs are read in one call and their
 * messages' visibility changed in one call per lane.
 */
export async function heartbeatRuns(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  body: unknown,
): Promise<Array<ItemOutcome<HeartbeatResult>>> {
  const { heartbeats } = parseWith(heartbeatBatch, body);
  const jobIds = (heartbeats as unknown[]).flatMap((item) => {
    const key = parseRunId(String((item as { runId?: unknown } | null)?.runId ?? ""));
    return key ? [key.jobId] : [];
  });
  const jobs = await deps.jobs.getJobs([...new Set(jobIds)]);
  const extension: Extension[] = [];
  const outcomes = await forEachItem(heartbeats as unknown[], (runId, item) =>
    heartbeatOne(
      deps,
      worker,
      runId,
      withoutRunId(item),
      jobs.get(parseRunId(runId)?.jobId ?? ""),
      extension,
    ),
  );
  await extend(deps, extension);
  return outcomes;
}

interface Extension {
  readonly runId: string;
  readonly receiptHandle: string;
  readonly seconds: number;
}

async function heartbeatOne(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  runId: string,
  body: unknown,
  job: Job | undefined,
  extension: Extension[],
): Promise<HeartbeatResult> {
  const { fence } = parseWith(heartbeatRequest, body);
  const key = parseRunId(runId);
  if (!key || !job || job.jobId !== key.jobId || !servesTenant(worker, job.tenant)) {
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
    extension.push({ runId, receiptHandle: held.receiptHandle, seconds: job.leaseSeconds + 1 });
  }
  return { runId, fence, leaseExpiresAt: formatInstant(leaseExpiresAt) };
}

/**
 * Keeps the heartbeaten runs' messages hidden for their new leases. A message that cannot be
 * changed (its receipt expired, or SQS's 12 hours were reached) shows up early: DynamoDB still
 * holds the lease, and the lease step hides it again until the lease ends (decision 0043);
 * the local emulator's lost queue is re-filled by the repair pass.
 */
async function extend(deps: SchedulerDeps, extension: readonly Extension[]): Promise<void> {
  const failed = new Set(
    await deps.queue.hide(extension.map(({ receiptHandle, seconds }) => ({ receiptHandle, seconds }))),
  );
  for (const { runId, receiptHandle } of extension) {
    if (failed.has(receiptHandle)) deps.log.warn("could not extend the run's message", { runId });
  }
}
