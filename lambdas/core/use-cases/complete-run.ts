import type { CompletionResult } from "@jobsched/contract";
import { type CompleteRequest, completeRequest } from "@jobsched/contract";
import { servesTenant, type WorkerCaller } from "../caller";
import { baseLeadSecondsOf, delaySecondsUntil, runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { NotFoundError, StaleFenceError } from "../errors";
import { parseRunId, runIdOf } from "../ids";
import { formatInstant } from "../instant";
import { decideFailure, succeeded } from "../lifecycle/outcomes";
import type { FinishedRun, RunOutcome } from "../ports";
import { type Run, RunStatus } from "../run";
import { parseWith } from "../validation";
import { endJobAfter } from "./end-job";

export type { CompletionResult };

/**
 * Records a worker's outcome. Only the holder of the run's current fence may complete it: a
 * worker that paused past its lease and was replaced gets a StaleFenceError (409) and changes
 * nothing.
 *
 * - succeeded: the run is finished; after a job's last run, the job is marked completed (as it
 *   is when its last run is dead-lettered: nothing more will be scheduled, a replay still runs).
 * - failed and retryable with attempts left: the run goes back to pending with a retry time
 *   from the job's backoff (equal jitter), and a new message is sent with that delay.
 * - failed otherwise (`retryable: false`, or the last attempt): the run is dead-lettered with
 *   its error, for an operator to replay.
 *
 * The delivering message is deleted once the outcome is recorded, and after a last run, once its
 * job is marked: should this die first, the message comes back (decision 0045). A completion repeated with
 * the same fence and result (the worker retried because the first answer was lost) gets the
 * recorded outcome again, and finishes what a crash may have cut short (marking the job done).
 *
 * A run of a tenant the worker does not serve is, to it, a run that does not exist (404): a
 * success is written only on the condition that the run is one of the worker's tenants', and a
 * failure is checked against the run before anything is written.
 */
export async function completeRun(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  runId: string,
  body: unknown,
  deleting: MessageDeletion = deleteAtOnce,
): Promise<CompletionResult> {
  const request = parseWith(completeRequest, body);
  const key = parseRunId(runId);
  if (!key) throw new NotFoundError(`run ${runId} not found`, "runId");
  const now = deps.clock.now();
  const seen: Seen = { deps, worker, runId, key, request, now, deleting };

  if (request.result === "succeeded") {
    const finished = await finishHeld(seen, succeeded(now));
    if (!finished) return repeatedOrStale(seen);
    await wakeBuffered(deps, key.jobId, finished);
    // The job's end before the message goes: a last run's message re-drives it (decision 0045).
    await endJobAfter(deps, key, finished, now);
    await deleting(deps, runId, finished.receiptHandle);
    deps.log.info("run completed", { runId, status: "succeeded", fence: request.fence });
    return { runId, status: "succeeded" };
  }
  return recordFailure(seen);
}

/**
 * overlapPolicy buffer-one: the run that waited for this one goes at once. Should this send be
 * lost, its own message comes back when this run's lease would have ended.
 */
async function wakeBuffered(deps: SchedulerDeps, jobId: string, finished: FinishedRun): Promise<void> {
  if (!finished.wakes) return;
  const { scheduledFor, tenant, type } = finished.wakes;
  const message = runMessageOf({ runId: runIdOf(jobId, scheduledFor), jobId, scheduledFor, tenant, type });
  await deps.queue.send([{ message, delaySeconds: 0 }]);
}

/** A completion as received: who sent it, for which run, with what, and when. */
interface Seen {
  readonly deps: SchedulerDeps;
  readonly worker: WorkerCaller;
  readonly runId: string;
  readonly key: { readonly jobId: string; readonly scheduledFor: number };
  readonly request: CompleteRequest;
  readonly now: number;
  readonly deleting: MessageDeletion;
}

/**
 * How a recorded completion's delivering message is deleted: at once, or collected by a batch
 * of completions and deleted in one call per lane (completeRuns). Deleting after the outcome
 * is recorded is what matters: a copy delivered before that finds a finished run and is dropped.
 */
export type MessageDeletion = (
  deps: SchedulerDeps,
  runId: string,
  receiptHandle: string | undefined,
) => Promise<void>;

async function recordFailure(seen: Seen): Promise<CompletionResult> {
  const { deps, runId, key, request, now } = seen;
  const [run, job] = await Promise.all([
    deps.runs.getRun(key.jobId, key.scheduledFor),
    deps.jobs.getJob(key.jobId),
  ]);
  if (!run || !servesTenant(seen.worker, run.tenant))
    throw new NotFoundError(`run ${runId} not found`, "runId");
  if (run.fence !== request.fence || run.status !== RunStatus.Leased) {
    return repeatedOrStale(seen, run);
  }

  const decision = decideFailure(request, run, job, {
    now,
    random: deps.random,
    repairGraceMs: deps.settings.repairGraceSeconds * 1000,
  });
  if (decision.kind === "retry") {
    const { retryAt, error } = decision.plan;
    const retried = await deps.runs.retryRun(key.jobId, key.scheduledFor, request.fence, decision.plan);
    if (!retried) return repeatedOrStale(seen);
    // Send the retry before deleting the old message: a crash in between leaves a copy that the
    // lease step drops (the run is not leasable before retryAt), never no message at all.
    await deps.queue.send([
      {
        message: runMessageOf({ ...run, retryAt }),
        delaySeconds: delaySecondsUntil(retryAt, now, baseLeadSecondsOf(run.type)),
      },
    ]);
    await seen.deleting(deps, runId, retried.receiptHandle);
    deps.log.info("run failed; retrying", { runId, attempt: run.attempt, retryAt, error });
    return { runId, status: "retrying", retryAt: formatInstant(retryAt) };
  }

  const finished = await finishHeld(seen, decision.ending, run);
  if (!finished) return repeatedOrStale(seen);
  await wakeBuffered(deps, key.jobId, finished);
  // A replay still runs it: leases ignore completed jobs. Before the message goes (as above).
  await endJobAfter(deps, key, finished, now);
  await seen.deleting(deps, runId, finished.receiptHandle);
  deps.log.warn("run dead-lettered", {
    runId,
    attempt: run.attempt,
    retryable: request.retryable,
    error: decision.ending.error,
  });
  return { runId, status: "dead-lettered" };
}

/**
 * Finishes the run held with the request's fence. Whether it is its job's last run is part of
 * the write's condition (a last run's end is its job's, see endJobAfter): known from
 * a run already read, or from the worker's echo of its lease's `final`, or else read. A wrong
 * echo costs a read, never a wrong write.
 */
async function finishHeld(
  seen: Seen,
  outcome: Omit<RunOutcome, "final">,
  known?: Run,
): Promise<FinishedRun | undefined> {
  const { deps, key, request, worker } = seen;
  const finish = (final: boolean) =>
    deps.runs.finishRun(key.jobId, key.scheduledFor, request.fence, { ...outcome, final }, worker.tenants);
  const guess = known?.final ?? request.final;
  if (guess !== undefined) {
    const finished = await finish(guess);
    if (finished || known) return finished;
  }
  const run = await deps.runs.getRun(key.jobId, key.scheduledFor);
  return run && run.final !== guess ? finish(run.final) : undefined;
}

async function deleteAtOnce(deps: SchedulerDeps, runId: string, receiptHandle: string | undefined) {
  if (receiptHandle === undefined) return;
  // If the handle is stale (the queue lost the message), the lease step drops any copy later.
  await deps.queue.delete(receiptHandle).catch((error: unknown) => {
    deps.log.warn("could not delete the run's message", { runId, error });
  });
}

/**
 * A completion that could not be recorded: either it was, already (a repeat of the same fence
 * and result: answer as the first time), or its fence no longer holds the lease (409).
 */
async function repeatedOrStale(seen: Seen, known?: Run): Promise<CompletionResult> {
  const { deps, runId, key, request, now } = seen;
  const run = known ?? (await deps.runs.getRun(key.jobId, key.scheduledFor));
  if (!run || !servesTenant(seen.worker, run.tenant))
    throw new NotFoundError(`run ${runId} not found`, "runId");
  if (run.fence !== request.fence) throw staleFenceOf(runId, run, request.fence);
  if (request.result === "succeeded" && run.status === RunStatus.Succeeded) {
    await endJobAfter(deps, key, run, now);
    return { runId, status: "succeeded" };
  }
  if (request.result === "failed" && run.status === RunStatus.DeadLettered) {
    await endJobAfter(deps, key, run, now);
    return { runId, status: "dead-lettered" };
  }
  if (request.result === "failed" && run.status === RunStatus.Pending && run.retryAt !== undefined) {
    return { runId, status: "retrying", retryAt: formatInstant(run.retryAt) };
  }
  throw staleFenceOf(runId, run, request.fence);
}

function staleFenceOf(runId: string, run: Run, fence: number): Error {
  return new StaleFenceError(
    `fence ${fence} does not hold the lease of run ${runId} (fence ${run.fence}, status ${run.status})`,
    "fence",
  );
}
