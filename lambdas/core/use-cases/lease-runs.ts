import { EARLY_HOLD_MS } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { formatInstant } from "../instant";
import { type Job, JobStatus } from "../job";
import type { ReceivedRunMessage } from "../ports";
import { runKeyOf } from "../run";
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
 * Hands due runs to a worker. Each received message becomes a lease through one conditional
 * update that raises the run's fence; the message's visibility timeout is the lease's length.
 * The batch's jobs are read in one call. Messages for runs that are finished, already held, or
 * gone fail that condition and are dropped here, so a duplicate delivery (or a repair's resend)
 * never executes a finished run; runs of cancelled jobs are cancelled, of paused jobs missed.
 */
export async function leaseRuns(deps: SchedulerDeps, body: unknown): Promise<Lease[]> {
  const request = parseWith(leaseRequest, body);
  const leaseSeconds = deps.settings.leaseSeconds;
  const received = await deps.queue.receive(request.max, leaseSeconds, request.waitSeconds);
  const jobs = await deps.jobs.getJobs(received.flatMap((r) => (r.message ? [r.message.jobId] : [])));
  const leases = await Promise.all(received.map((r) => leaseOne(deps, request, r, leaseSeconds, jobs)));
  return leases.filter((lease): lease is Lease => lease !== undefined);
}

async function leaseOne(
  deps: SchedulerDeps,
  request: LeaseRequest,
  { message, receiptHandle }: ReceivedRunMessage,
  leaseSeconds: number,
  jobs: ReadonlyMap<string, Job>,
): Promise<Lease | undefined> {
  const drop = async (reason: string) => {
    deps.log.info("dropping run message", { reason, runId: message?.runId });
    await deps.queue.delete(receiptHandle);
    return undefined;
  };
  if (!message) return drop("unreadable message");
  if (!request.types.includes(message.type)) {
    await deps.queue.release(receiptHandle);
    return undefined;
  }
  const early = message.scheduledFor - deps.clock.now();
  if (early > EARLY_HOLD_MS) {
    await deps.queue.extend(receiptHandle, Math.ceil(early / 1000));
    return undefined;
  }
  if (early > 0) await deps.clock.sleep(early); // delays are whole seconds: start on the due instant

  const now = deps.clock.now();
  const job = jobs.get(message.jobId);
  if (!job || job.status === JobStatus.Cancelled) {
    await deps.runs.abandonRun(
      message.jobId,
      message.scheduledFor,
      "cancelled",
      "the job was cancelled before the run started",
      now,
    );
    return drop("job is cancelled or gone");
  }
  if (job.status === JobStatus.Paused) {
    // Paused jobs start nothing; on resume the missed-run policy looks at later firings.
    await deps.runs.abandonRun(
      message.jobId,
      message.scheduledFor,
      "missed",
      "the job was paused before the run started",
      now,
    );
    return drop("job is paused");
  }

  const jobLease = job.leaseSeconds;
  const leaseExpiresAt = now + jobLease * 1000;
  const leased = await deps.runs.leaseRun(message.jobId, message.scheduledFor, {
    workerId: request.workerId,
    leaseExpiresAt,
    receiptHandle,
    checkAt: leaseExpiresAt + deps.settings.repairGraceSeconds * 1000,
    now,
  });
  // Finished, held by a live lease (this is a second copy: the holder's own message comes back
  // if it fails), or gone.
  if (!leased) return drop("run is finished, held by another worker, or gone");
  if (jobLease !== leaseSeconds) await deps.queue.extend(receiptHandle, jobLease);

  deps.log.info("run leased", { runId: leased.runId, fence: leased.fence, workerId: request.workerId });
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
