import { OverlapPolicy } from "@jobsched/contract";
import { delaySecondsAfter, hiddenWhileHeld } from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { Job } from "../job";
import { seededRun } from "../lifecycle/creation";
import { DROPPED_RETRY_REASON } from "../lifecycle/outcomes";
import { decideOverlap } from "../lifecycle/overlap-decision";
import { isUnfinished } from "../lifecycle/transition";
import type { Run, RunSeed } from "../run";
import { endJobOnMessage } from "./end-job";
import { type Readable, sendBack } from "./send-back";
import { markedLast } from "./unstarted-runs";

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
  received: Readable,
  startsAt: number,
  /** A run made but not written (decision 0051): what its message carries. */
  seed?: RunSeed,
): Promise<boolean> {
  const { message, receiptHandle } = received;
  const policy = job.overlapPolicy ?? OverlapPolicy.Allow;
  if (policy === OverlapPolicy.Allow || message.backfill) return true;
  const now = deps.clock.now();
  const holder = job.activeRunAt;
  const [stored, active] = await Promise.all([
    deps.runs.getRun(message.jobId, message.scheduledFor),
    holder === undefined || holder === message.scheduledFor ? undefined : deps.runs.getRun(job.jobId, holder),
  ]);
  // Marked its job's last first, should its message say so and the run not (markedLast).
  const own = stored ? await markedLast(deps, stored, seed?.final === true) : seed && seededRun(seed);
  const waitingAt = active?.wakes;
  const waiting =
    policy === OverlapPolicy.BufferOne && waitingAt !== undefined && waitingAt !== message.scheduledFor
      ? await deps.runs.getRun(job.jobId, waitingAt)
      : undefined;
  const atMostOnce = job.delivery === "at-most-once";
  const decision = decideOverlap({
    policy,
    backfill: false,
    atMostOnce,
    maxAttempts: job.maxAttempts,
    own,
    startsAt,
    active,
    waiting,
    now,
  });
  // Through sendBack: a message kept waiting here is received again and again (a buffer-one
  // waiter behind a long run), and a worn one goes back as a fresh copy before SQS's receive
  // count moves it to the dead-letter queue; a scheduled run has only its message (0043).
  const hide = async (seconds: number) => {
    await sendBack(deps, [{ received, seconds }]);
    return false;
  };
  const wait = (until: number) =>
    hide(Math.min(RECHECK_SECONDS, Math.max(MIN_RECHECK_SECONDS, delaySecondsAfter(until, now))));
  switch (decision.kind) {
    case "end-own":
      return true;
    case "drop": {
      // A message of a run under a live lease may be its holder's own, shown early.
      const held = hiddenWhileHeld(own, now);
      if (held !== undefined) return hide(held);
      await endJobOnMessage(deps, own, now);
      deps.log.info("dropping run message", { reason: decision.reason, runId: message.runId });
      await deps.queue.delete(receiptHandle);
      return false;
    }
    case "wait":
      return wait(decision.until);
    case "skip":
      await deps.runs.abandonRun(
        message.jobId,
        message.scheduledFor,
        "skipped",
        decision.reason,
        now,
        false,
        seed,
      );
      await deps.queue.delete(receiptHandle);
      deps.log.info("run skipped: the previous one is unfinished", { runId: message.runId });
      return false;
    case "buffer":
      if (!active) break;
      // The run noted as waiting is written first (decision 0051): the finishing run's wake
      // names it by its instant alone, and a waiter not written would read as gone.
      if (!stored && own) await deps.runs.createRun(own);
      if (await deps.runs.setWake(job.jobId, active.scheduledFor, message.scheduledFor, decision.replacing))
        return wait(decision.until);
      // The running one finished meanwhile (this one starts), or another run took the place.
      if (await stillUnfinished(deps, active)) return hide(1);
      break;
    case "revoke":
      if (!active) break;
      if (await deps.runs.revokeRun(job.jobId, active.scheduledFor, decision.reason, now)) {
        deps.log.info("run revoked by a newer one", { runId: active.runId, by: message.runId });
      } else if (await stillUnfinished(deps, active)) return hide(1);
      break;
    case "drop-active-retry":
      if (!active) break;
      if (
        await deps.runs.dropRetry(active.jobId, active.scheduledFor, {
          reason: DROPPED_RETRY_REASON,
          now,
          final: active.final,
        })
      ) {
        deps.log.warn("at-most-once: a waiting retry dead-lettered", { runId: active.runId });
      } else if (await stillUnfinished(deps, active)) return hide(1);
      break;
    case "lease":
      break;
  }
  // A run that claims its job's slot is written first (decision 0051): the next run of the job
  // reads the holder as the slot names it, and one not written would read as gone (its claim
  // made, its lease cut short), letting a second run start beside it.
  if (!stored && own) await deps.runs.createRun(own);
  if (await deps.jobs.claimRunSlot(job.jobId, holder, message.scheduledFor)) return true;
  // Another run of the job started meanwhile: look again in a moment, under the policy.
  return hide(1);
}

async function stillUnfinished(deps: SchedulerDeps, run: Run): Promise<boolean> {
  const now = await deps.runs.getRun(run.jobId, run.scheduledFor);
  return now !== undefined && isUnfinished(now);
}
