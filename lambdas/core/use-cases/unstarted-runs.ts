import { FUNCTION_TIMEOUT_SECONDS } from "../../definitions/functions";
import type { SchedulerDeps } from "../deps";
import type { Job } from "../job";
import { seededRun } from "../lifecycle/creation";
import { DROPPED_RETRY_REASON } from "../lifecycle/outcomes";
import type { RunMessage } from "../ports";
import { type Run, type RunSeed, RunStatus } from "../run";
import { endJobAfter, endJobOnMessage } from "./end-job";
import { cancelRunsAhead, SUPERSEDED_REASON } from "./runs-ahead";
import type { Readable } from "./send-back";

/**
 * The lease step's ways of ending a run it does not hand over, and of reading a run that may be
 * made and not written (decision 0051): at-most-once runs leased before, runs of cancelled or
 * paused jobs, a one-off's superseded run, a message whose job is not stored yet.
 */

/** Why a run made and never leased within the run retention is recorded missed (decision 0051). */
export const STALE_SEED_REASON =
  "not started within the run retention (runRetentionDays) after it was made; recorded missed, not run";

/** The reason an at-most-once run whose lease lapsed is recorded `lost`. */
export const LOST_RUN_REASON =
  "its lease lapsed without a completion (the worker crashed or hung); at-most-once: not run again";

/**
 * At-most-once: a run leased before is never leased again. One whose lease lapsed is recorded
 * lost; one that failed and waits for a retry (its job was PATCHed to at-most-once after the
 * failure) is dead-lettered, for an operator to replay. True when this call recorded either
 * (and the job's end it leads to); false when the run is neither.
 */
export async function endRetriedAtMostOnce(
  deps: SchedulerDeps,
  message: RunMessage,
  now: number,
  seed?: RunSeed,
): Promise<boolean> {
  const stored = await deps.runs.getRun(message.jobId, message.scheduledFor);
  if (!stored) return false;
  const run = await markedLast(deps, stored, seed?.final === true);
  const lapsed = run.status === RunStatus.Leased && (run.leaseExpiresAt ?? 0) <= now;
  const retrying = run.status === RunStatus.Pending && run.attempt >= 1;
  const ended = lapsed
    ? await deps.runs.loseRun(run.jobId, run.scheduledFor, { reason: LOST_RUN_REASON, now, final: run.final })
    : retrying
      ? await deps.runs.dropRetry(run.jobId, run.scheduledFor, {
          reason: DROPPED_RETRY_REASON,
          now,
          final: run.final,
        })
      : undefined;
  if (!ended) return false;
  if (lapsed) {
    deps.log.warn("at-most-once run lost", { runId: run.runId, fence: run.fence, workerId: run.workerId });
    deps.counters?.count("RunsLost", 1);
  } else deps.log.warn("at-most-once: a waiting retry dead-lettered", { runId: run.runId });
  await endJobAfter(deps, ended, ended, now);
  return true;
}

/**
 * Ends a run that must not start (its job is cancelled, gone or paused): a run that is not its
 * job's last, as most are, in one write; a last run is read first, and its job's end follows
 * before the message is deleted (endJobAfter: a paused job's last run enters the repair index,
 * so that a resume killed before it ended the job is repaired).
 */
export async function abandonUnstarted(
  deps: SchedulerDeps,
  message: RunMessage,
  status: "cancelled" | "missed",
  reason: string,
  now: number,
  seed: RunSeed | undefined,
): Promise<void> {
  const { jobId, scheduledFor } = message;
  // A run made but not written is written ended (decision 0051); its seed says if it is the last.
  const first = await deps.runs.abandonRun(
    jobId,
    scheduledFor,
    status,
    reason,
    now,
    seed?.final ?? false,
    seed,
  );
  if (first) {
    if (first.final) await endJobAfter(deps, first, first, now);
    return;
  }
  const stored = await deps.runs.getRun(jobId, scheduledFor);
  if (!stored) return;
  const run = await markedLast(deps, stored, seed?.final === true);
  // Written, its `final` not what was tried (a copy whose seed says otherwise), or marked last
  // just now: again with its own.
  const ended =
    run.final === (seed?.final ?? false) && run.final === stored.final
      ? undefined
      : await deps.runs.abandonRun(jobId, scheduledFor, status, reason, now, run.final);
  if (ended) {
    if (ended.final) await endJobAfter(deps, ended, ended, now);
    return;
  }
  // Finished before (its finisher died before marking the job): its message re-drives the end.
  if (run.final) await endJobOnMessage(deps, run, now);
}

/**
 * A one-off's message for an instant that is not its firing (rare; one read then): a manual
 * run's (trigger, backfill), or a run a PATCH of its `runAt` superseded and was killed before
 * cancelling (decision 0048 makes such runs 15 minutes ahead). A firing's run never handed out
 * is cancelled then, instead of running at the old time as well as the new. (A recurring job's
 * superseded run still runs once: decision 0024.)
 */
export async function supersededOneOffRun(
  deps: SchedulerDeps,
  job: Job,
  message: RunMessage,
  now: number,
  seed: RunSeed | undefined,
): Promise<boolean> {
  const firing = job.lastFiringAt ?? job.nextRunAt;
  if (job.schedule.kind !== "once" || firing === undefined || message.scheduledFor === firing) return false;
  const run = await storedOrMade(deps, message, seed);
  if (!run || run.origin !== undefined || run.status !== RunStatus.Pending || run.attempt > 0) return false;
  // Only a run that was ahead when the job was last written, as the PATCH's own cancel takes
  // them: one already due then was kept by it, and runs (decision 0024).
  if (run.scheduledFor <= job.updatedAt) return false;
  await cancelRunsAhead(deps, [run], SUPERSEDED_REASON, now);
  return true;
}

/**
 * How long a run may wait for its job to be stored: a create makes a near-term one-off's run
 * and sends it before it stores the job (decision 0048), and gives up within its function's
 * timeout. Twice that, so a slow create is never taken for a dead one.
 */
export const CREATE_SETTLES_MS = 2 * FUNCTION_TIMEOUT_SECONDS.api * 1000;
/**
 * How long such a run's message is hidden before it is looked at again: a second, as a message
 * sent with no delay (a job due within its lead) can come before its create stored the job,
 * and its run must not start late for it.
 */
const CREATE_RECHECK_SECONDS = 1;

/**
 * A message whose job is not stored (jobs are never deleted): its run was made by a create that
 * had not stored the job yet (decision 0048). While that create may still finish, the message
 * comes back; after, the create is dead and its caller had no answer: the message is dropped and
 * the run left pending, for a retry of the create (same idempotency key) to send again.
 */
export async function jobNotStored(
  deps: SchedulerDeps,
  received: Readable,
  now: number,
  seed: RunSeed | undefined,
  drop: (reason: string) => Promise<undefined>,
): Promise<undefined> {
  const { message, receiptHandle } = received;
  const run = await storedOrMade(deps, message, seed);
  if (run?.status === RunStatus.Pending && now - run.createdAt < CREATE_SETTLES_MS) {
    await deps.queue.hide([{ receiptHandle, seconds: CREATE_RECHECK_SECONDS }]);
    return undefined;
  }
  return drop("job not stored: its create did not finish");
}

/**
 * The run a message names: as stored, or, made but not written (decision 0051), as its seed
 * stands for it.
 */
export async function storedOrMade(
  deps: SchedulerDeps,
  message: RunMessage,
  seed: RunSeed | undefined,
  /** Marked last first, should the seed say so and the written run not (markedLast). */
  options: { readonly markLast?: boolean } = {},
): Promise<Run | undefined> {
  const run = await deps.runs.getRun(message.jobId, message.scheduledFor);
  if (!run) return seed && seededRun(seed);
  return options.markLast ? markedLast(deps, run, seed?.final === true) : run;
}

/**
 * A written run as its message's copy stands for it: marked its job's last first when the copy
 * says so and the run does not (decision 0046's addendum). That happens only where a schedule
 * change met runs a creator made and died before recording: the old schedule's copy wrote the
 * run, and the new one's made the same instant its last. One write then; none otherwise.
 */
export async function markedLast(
  deps: Pick<SchedulerDeps, "runs">,
  run: Run,
  marksLast: boolean,
): Promise<Run> {
  if (run.final || !marksLast || run.status === RunStatus.Cancelled) return run;
  const marked = await deps.runs.markLastRun(run.jobId, run.scheduledFor);
  return marked ?? (await deps.runs.getRun(run.jobId, run.scheduledFor)) ?? run;
}

/** How long finished runs are kept (ms; 0: for ever): older seeds write nothing (seedOf). */
export function retentionMsOf(deps: Pick<SchedulerDeps, "settings">): number {
  return deps.settings.runRetentionDays * 86_400_000;
}
