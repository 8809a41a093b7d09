import { OverlapPolicy } from "@jobsched/contract";
import { delaySecondsAfter } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { formatInstant } from "../instant";
import type { Job } from "../job";
import type { RunMessage } from "../ports";
import { type Run, RunStatus } from "../run";

/**
 * A job's overlap policy, applied when one of its runs is about to be leased (decision 0025).
 * The job records the run that last started (`activeRunAt`); a run coming due reads that run,
 * and while it is unfinished (pending a retry, or leased):
 *
 * - `skip`: the new run is recorded `skipped` with the reason;
 * - `buffer-one`: the new run waits: it is noted on the running one (`wakes`), which sends it
 *   on its way when it finishes, and its message is hidden until the running one's lease ends
 *   (at least MIN_RECHECK_SECONDS, at most RECHECK_SECONDS); a run due while another already
 *   waits is skipped;
 * - `cancel-previous`: the running one is cancelled and its fence raised, so its worker's
 *   heartbeat and completion are refused (409) and the worker SDK aborts its handler; the new
 *   run starts.
 *
 * A job's last run is never skipped or revoked (it is what ends the job): it waits instead.
 * Backfilled runs run beside the others whatever the policy. Claiming the slot is one
 * conditional write on the job, so of two runs due together one starts and the other looks
 * again a second later.
 */
export const RECHECK_SECONDS = 300;
/**
 * The shortest wait: a running run whose lease lapsed (its worker died) is unfinished until it
 * is leased again and finishes; the waiting run must not spin on it meanwhile.
 */
export const MIN_RECHECK_SECONDS = 5;

/** Whether the run may be leased now; when not, its message was dealt with here. */
export async function admitOverlap(
  deps: SchedulerDeps,
  job: Job,
  message: RunMessage,
  receiptHandle: string,
  now: number,
): Promise<boolean> {
  const policy = job.overlapPolicy ?? OverlapPolicy.Allow;
  if (policy === OverlapPolicy.Allow || message.backfill) return true;
  const holder = job.activeRunAt;
  if (holder === message.scheduledFor) return true; // its own next attempt
  if (holder !== undefined) {
    const active = await deps.runs.getRun(job.jobId, holder);
    if (
      active &&
      isUnfinished(active) &&
      !(await overlapAllows(deps, policy, active, message, receiptHandle, now))
    ) {
      return false;
    }
  }
  if (await deps.jobs.claimRunSlot(job.jobId, holder, message.scheduledFor)) return true;
  // Another run of the job started meanwhile: look again in a moment, under the policy.
  await deps.queue.hide([{ receiptHandle, seconds: 1 }]);
  return false;
}

function isUnfinished(run: Run): boolean {
  return run.status === RunStatus.Pending || run.status === RunStatus.Leased;
}

async function overlapAllows(
  deps: SchedulerDeps,
  policy: Exclude<OverlapPolicy, "allow">,
  active: Run,
  message: RunMessage,
  receiptHandle: string,
  now: number,
): Promise<boolean> {
  const running = formatInstant(active.scheduledFor);
  const wait = async () => {
    const until = active.leaseExpiresAt ?? active.retryAt ?? now;
    await deps.queue.hide([
      {
        receiptHandle,
        seconds: Math.min(RECHECK_SECONDS, Math.max(MIN_RECHECK_SECONDS, delaySecondsAfter(until, now))),
      },
    ]);
    return false;
  };
  const skip = async (reason: string) => {
    // A job's last run is what ends it: it waits rather than be skipped.
    const run = await deps.runs.getRun(message.jobId, message.scheduledFor);
    if (!run || run.final) return wait();
    await deps.runs.abandonRun(message.jobId, message.scheduledFor, "skipped", reason, now);
    await deps.queue.delete(receiptHandle);
    deps.log.info("run skipped: the previous one is unfinished", { runId: message.runId, running });
    return false;
  };
  switch (policy) {
    case OverlapPolicy.Skip:
      return skip(`the run of ${running} was still unfinished (overlapPolicy skip)`);
    case OverlapPolicy.BufferOne:
      if (await deps.runs.setWake(active.jobId, active.scheduledFor, message.scheduledFor)) return wait();
      if (!isUnfinished((await deps.runs.getRun(active.jobId, active.scheduledFor)) ?? active)) return true;
      return skip(
        `the run of ${running} was still unfinished and another run waits for it (overlapPolicy buffer-one)`,
      );
    case OverlapPolicy.CancelPrevious: {
      const reason = `cancelled: the run of ${formatInstant(message.scheduledFor)} replaced it (overlapPolicy cancel-previous)`;
      if (await deps.runs.revokeRun(active.jobId, active.scheduledFor, reason, now)) {
        deps.log.info("run revoked by a newer one", { runId: active.runId, by: message.runId });
        return true;
      }
      // Finished meanwhile, or the job's last run (never revoked): then the new one waits.
      const current = await deps.runs.getRun(active.jobId, active.scheduledFor);
      return current && isUnfinished(current) ? wait() : true;
    }
  }
}
