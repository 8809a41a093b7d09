import { EARLY_HOLD_MS } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { formatInstant } from "../instant";
import { JobStatus } from "../job";
import type { ReceivedRunMessage } from "../ports";
import { isFinished, isLeasable, runKeyOf } from "../run";
import { type LeaseRequest, leaseRequest } from "../schemas";
import { parseWith } from "../validation";

export interface Lease {
  readonly runId: string;
  readonly runKey: string;
  readonly jobId: string;
  readonly type: string;
  readonly scheduledFor: string;
  readonly attempt: number;
  readonly fence: number;
  readonly leaseExpiresAt: string;
  readonly payload: unknown;
}

/**
 * Hands due runs to a worker. Each received message becomes a lease only after a conditional
 * update raised the run's fence; the message's visibility timeout is the lease's length.
 * Messages for runs that are finished, already held, or whose job is gone are dropped here,
 * so a duplicate delivery (or a repair's resend) never executes a finished run.
 */
export async function leaseRuns(deps: SchedulerDeps, body: unknown): Promise<Lease[]> {
  const request = parseWith(leaseRequest, body);
  const leaseSeconds = deps.settings.leaseSeconds;
  const received = await deps.queue.receive(request.max, leaseSeconds, request.waitSeconds);
  const leases = await Promise.all(received.map((r) => leaseOne(deps, request, r, leaseSeconds)));
  return leases.filter((lease): lease is Lease => lease !== undefined);
}

async function leaseOne(
  deps: SchedulerDeps,
  request: LeaseRequest,
  { message, receiptHandle }: ReceivedRunMessage,
  leaseSeconds: number,
): Promise<Lease | undefined> {
  const drop = async (reason: string) => {
    deps.log.info("dropping run message", { reason, runId: message?.runId });
    await deps.queue.delete(receiptHandle);
    return undefined;
  };
  if (!message) return drop("unreadable message");

  const run = await deps.runs.getRun(message.jobId, message.scheduledFor);
  const now = deps.clock.now();
  if (!run) return drop("run does not exist");
  if (isFinished(run.status)) return drop(`run already ${run.status}`);
  // Someone holds a live lease: this is a second copy; the holder's own message comes back if it fails.
  if (!isLeasable(run, now)) return drop("run is leased by another worker");
  if (!request.types.includes(run.type)) {
    await deps.queue.release(receiptHandle);
    return undefined;
  }
  const early = run.scheduledFor - now;
  if (early > EARLY_HOLD_MS) {
    await deps.queue.extend(receiptHandle, Math.ceil(early / 1000));
    return undefined;
  }
  if (early > 0) await deps.clock.sleep(early); // delays are whole seconds: start on the due instant

  const job = await deps.jobs.getJob(run.jobId);
  if (!job || job.status === JobStatus.Cancelled) {
    await deps.runs.abandonRun(run, "cancelled", "the job was cancelled before the run started", now);
    return drop("job is cancelled or gone");
  }
  if (job.status === JobStatus.Paused) {
    // Paused jobs start nothing; on resume the missed-run policy looks at later firings.
    await deps.runs.abandonRun(run, "missed", "the job was paused before the run started", now);
    return drop("job is paused");
  }

  const jobLease = job.leaseSeconds;
  if (jobLease !== leaseSeconds) await deps.queue.extend(receiptHandle, jobLease);
  const leasedAt = deps.clock.now();
  const leaseExpiresAt = leasedAt + jobLease * 1000;
  const leased = await deps.runs.leaseRun(run, run.fence, {
    workerId: request.workerId,
    leaseExpiresAt,
    receiptHandle,
    checkAt: leaseExpiresAt + deps.settings.repairGraceSeconds * 1000,
    now: leasedAt,
  });
  if (!leased) return drop("another worker leased the run first");

  deps.log.info("run leased", { runId: run.runId, fence: leased.fence, workerId: request.workerId });
  return {
    runId: leased.runId,
    runKey: runKeyOf(leased.jobId, leased.scheduledFor),
    jobId: leased.jobId,
    type: leased.type,
    scheduledFor: formatInstant(leased.scheduledFor),
    attempt: leased.attempt,
    fence: leased.fence,
    leaseExpiresAt: formatInstant(leaseExpiresAt),
    payload: job.payload,
  };
}
