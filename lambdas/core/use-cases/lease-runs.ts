/** A lease as the worker gets it: defined with the other responses (responses.ts). */

import type { Lease } from "@jobsched/contract";
import { leaseRequest } from "@jobsched/contract";
import { API_GATEWAY_TIMEOUT_MS, SAFE_VISIBILITY_SECONDS } from "../aws-limits";
import { servesTenant, type WorkerCaller } from "../caller";
import {
  DELIVERY_LEAD_SECONDS,
  dueOf,
  EARLY_HOLD_MS,
  hiddenWhileHeld,
  requestTagOf,
  seedOf,
} from "../delivery";
import type { SchedulerDeps } from "../deps";
import { formatInstant } from "../instant";
import { type Job, JobStatus } from "../job";
import { LEASE_RESPONSE_BUDGET_BYTES, leaseResponseBytes, withinBudget } from "../lease-budget";
import { seededRun } from "../lifecycle/creation";
import { exhaustedByLapses } from "../lifecycle/outcomes";
import { laneKeyOf, type ReceivedRunMessage, type RunMessage } from "../ports";
import { PAUSED_RUN_REASON, type RunSeed, runKeyOf } from "../run";
import { parseWith } from "../validation";
import { endJobAfter, endJobOnMessage } from "./end-job";
import { admitOverlap } from "./overlap";
import { RECYCLE_AFTER_RECEIVES, type Readable, type SentBack, sendBack } from "./send-back";
import {
  abandonUnstarted,
  endRetriedAtMostOnce,
  jobNotStored,
  markedLast,
  retentionMsOf,
  STALE_SEED_REASON,
  storedOrMade,
  supersededOneOffRun,
} from "./unstarted-runs";

export { CREATE_SETTLES_MS, LOST_RUN_REASON, STALE_SEED_REASON } from "./unstarted-runs";

export type { Lease };
export { RECYCLE_AFTER_RECEIVES };

/**
 * Hands due runs to a worker. Each received message becomes a lease through one conditional
 * update that raises the run's fence; the message stays hidden until the lease has lapsed.
 * The batch's jobs are read in one call. Messages for runs that are finished or gone fail that
 * condition and are dropped here, so a duplicate delivery (or a repair's resend) never executes
 * a finished run; one of a run under a live lease is hidden until the lease ends (decision 0043); runs of cancelled jobs are cancelled, of paused jobs missed.
 * A run whose leases lapsed maxAttempts times without a completion is dead-lettered.
 * With a per-tenant rate limit, runs over a tenant's limit wait a second in the queue.
 *
 * A message shows up its lead before its run is due (at least DELIVERY_LEAD_SECONDS, longer
 * for a dense second). Its lease is granted at once and handed over at once, counting from the
 * run's start instant (`startAt`); the worker holds the run until then (decision 0014). No
 * Lambda waits for a due instant: a request answers as soon as its receive does.
 *
 * The worker sees only the tenants it serves (its binding): their lanes are the only ones
 * polled. No single run can break a request for the others in it: runs past the response's
 * byte budget go back untouched, a run due beyond the hold window is hidden again, one run's
 * visibility change failing is that run's alone, and the request answers within
 * REQUEST_BUDGET_MS whatever it receives.
 */
export async function leaseRuns(deps: SchedulerDeps, worker: WorkerCaller, body: unknown): Promise<Lease[]> {
  const request = parseWith(leaseRequest, body);
  const deadline = deps.clock.now() + REQUEST_BUDGET_MS;
  const received = await deps.queue.receive({
    types: request.types,
    tenants: worker.tenants,
    max: request.max,
    visibilitySeconds: receiveVisibility(deps),
    // No poll runs past the request's budget.
    waitSeconds: Math.max(
      0,
      Math.min(request.waitSeconds, Math.floor((deadline - deps.clock.now()) / 1000) - 1),
    ),
    // A backlog fills the request; runs of a dense second leased ahead come at fair shares.
    topUpDueBefore: deps.clock.now() + (DELIVERY_LEAD_SECONDS + 1) * 1000,
    // The lane that rang the worker's bell (decision 0049), polled first.
    first: request.prefer ? laneKeyOf(request.prefer) : undefined,
  });
  const granted = await grantLeases(deps, worker, request.workerId, received, {
    receivedVisibilitySeconds: receiveVisibility(deps),
  });
  return granted.map((g) => g.lease);
}

export interface GrantOptions {
  /** The visibility the messages were received with (their lease is set from it). */
  readonly receivedVisibilitySeconds: number;
  /**
   * Whether a run may be leased in this call, its job read: one that may not goes back to its
   * queue for a second, its fence untouched (the dispatcher's per-target concurrency).
   */
  readonly admit?: (message: RunMessage, job: Job | undefined) => boolean;
}

/**
 * The lease step after the receive, shared by the worker protocol and the dispatcher: sets
 * aside what cannot be handed over, reads the batch's jobs, keeps to the response's byte
 * budget and the tenants' rate limits, grants each lease (or records why not), and hides each
 * leased run's message until its lease lapses.
 */
export async function grantLeases(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  workerId: string,
  received: readonly ReceivedRunMessage[],
  options: GrantOptions,
): Promise<Granted[]> {
  const now = deps.clock.now();
  const near = await setAsideWhatCannotBeHandedOver(deps, worker, received, now);
  const jobs = await deps.jobs.getJobs(near.map((r) => r.message.jobId));
  // Runs past the response's byte budget go back at once, for another request; no fence moved.
  const { fits, overflow } = withinBudget(
    near,
    (r) => leaseResponseBytes(jobs.get(r.message.jobId)?.payload),
    { left: LEASE_RESPONSE_BUDGET_BYTES },
  );
  const admit = options.admit;
  const admitted = admit ? fits.filter((r) => admit(r.message, jobs.get(r.message.jobId))) : fits;
  await sendBack(deps, [
    ...overflow.map((r) => ({ received: r, seconds: 0 })),
    ...fits.filter((r) => !admitted.includes(r)).map((r) => ({ received: r, seconds: 1 })),
  ]);
  const batch = await holdBackOverLimit(deps, admitted, now);
  const granted = await settleEach(deps, batch, (r) => leaseOne(deps, worker, workerId, r, jobs));
  await hideUntilLapsed(deps, granted, now, options.receivedVisibilitySeconds);
  return granted;
}

/**
 * Leases each run on its own: a write that throws (a throttle past the SDK's retries) is that
 * run's alone. Its message stays hidden until the received visibility ends and comes back, and
 * the other runs of the batch are handed over. Only when every one failed does the request fail.
 */
async function settleEach(
  deps: SchedulerDeps,
  batch: readonly Readable[],
  lease: (r: Readable) => Promise<Granted | undefined>,
): Promise<Granted[]> {
  const settled = await Promise.allSettled(batch.map(lease));
  const failed = settled.flatMap((s, i) =>
    s.status === "rejected" ? [{ error: s.reason, run: batch[i] }] : [],
  );
  if (failed.length > 0 && failed.length === settled.length) throw failed[0]?.error;
  for (const { error, run } of failed)
    deps.log.warn("could not lease a run; its message comes back", {
      runId: run?.message.runId,
      error: String(error),
    });
  return settled.flatMap((s) => (s.status === "fulfilled" && s.value !== undefined ? [s.value] : []));
}

/**
 * The visibility a run message is received with: the default lease from a start up to a lead
 * and a second ahead, plus a second, so that a copy only comes back once the lease has lapsed.
 * Runs leased further ahead (a dense second) or with a lease of their own are set apart after.
 */
function receiveVisibility(deps: SchedulerDeps): number {
  return deps.settings.leaseSeconds + DELIVERY_LEAD_SECONDS + 2;
}

/**
 * Keeps each leased run's message hidden until its lease has lapsed, in one batched call per
 * lane: only the runs whose lease ends later than the receive's visibility (leased ahead of a
 * dense second, or a longer lease) or much sooner (a shorter lease: a lapse comes back sooner).
 * Capped at what SQS allows after a receive (leaseSeconds is bounded so the cap only bites on
 * jobs stored before that bound). If a change fails, the lease still holds in the table: a
 * message that shows up early finds it live and is hidden again until the lease ends (it
 * carries the run: decision 0043). The other runs are unaffected.
 */
async function hideUntilLapsed(
  deps: SchedulerDeps,
  granted: readonly Granted[],
  now: number,
  received: number,
) {
  const changes = granted.flatMap((g) => {
    const seconds = Math.min(SAFE_VISIBILITY_SECONDS, Math.ceil((g.leaseExpiresAt - now) / 1000) + 1);
    const needed = seconds > received || seconds < received - (DELIVERY_LEAD_SECONDS + 2);
    return needed ? [{ receiptHandle: g.receiptHandle, seconds }] : [];
  });
  const failed = new Set(await deps.queue.hide(changes));
  for (const g of granted.filter((g) => failed.has(g.receiptHandle))) {
    deps.log.warn("could not extend the run's message to its lease", {
      runId: g.lease.runId,
      leaseExpiresAt: g.lease.leaseExpiresAt,
    });
  }
}

/**
 * The longest a lease request takes. Seven seconds under API Gateway's limit leave room for
 * the DynamoDB and SQS calls after the receive's long poll.
 */
const REQUEST_BUDGET_MS = API_GATEWAY_TIMEOUT_MS - 7_000;

/**
 * Sorts out the received messages this request cannot hand over, before anything is leased:
 * unreadable ones are deleted; runs of tenants the worker does not serve (no lane of theirs is
 * polled, so only a misfiled message) go back at once; worn ones go back at once as a fresh
 * copy (sendBack); runs due beyond the hold window (a
 * retry or a repair's resend due later than SQS can delay a message) are hidden again until
 * DELIVERY_LEAD_SECONDS before they are due (at most what SQS allows, 12 hours; later ones
 * are hidden again then). Returns the rest: runs this request may lease and hand over.
 */
async function setAsideWhatCannotBeHandedOver(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  received: readonly ReceivedRunMessage[],
  now: number,
): Promise<Readable[]> {
  const near: Readable[] = [];
  const back: SentBack[] = [];
  const unreadable: string[] = [];
  for (const r of received) {
    if (!r.message) unreadable.push(r.receiptHandle);
    else if (!servesTenant(worker, r.message.tenant)) back.push({ received: r as Readable, seconds: 0 });
    // Worn by many receives (a run whose leases keep lapsing: up to maxAttempts, which may be
    // more than SQS's maxReceiveCount): back at once as a fresh copy, before SQS moves it to
    // the dead-letter queue, which nothing reads; the message is the run's carrier (0043).
    else if ((r.receiveCount ?? 0) >= RECYCLE_AFTER_RECEIVES)
      back.push({ received: r as Readable, seconds: 0 });
    else if (dueOf(r.message) - now > EARLY_HOLD_MS) {
      const seconds = Math.floor((dueOf(r.message) - now) / 1000) - DELIVERY_LEAD_SECONDS;
      back.push({ received: r as Readable, seconds: Math.min(SAFE_VISIBILITY_SECONDS, seconds) });
    } else near.push(r as Readable);
  }
  if (unreadable.length > 0) deps.log.info("dropping unreadable run messages", { count: unreadable.length });
  await Promise.all([
    sendBack(deps, back),
    ...unreadable.map((handle) =>
      deps.queue.delete(handle).catch((error: unknown) => {
        deps.log.warn("could not delete an unreadable run message", { error: String(error) });
      }),
    ),
  ]);
  return near;
}

/**
 * The per-tenant rate limit: runs over a tenant's allowance for this second go back to the
 * queue for a second (their lane keeps them; nothing is dropped).
 */
async function holdBackOverLimit(
  deps: SchedulerDeps,
  received: readonly Readable[],
  now: number,
): Promise<Readable[]> {
  if (deps.settings.tenantRunsPerSecond <= 0) return [...received];
  const byTenant = new Map<string, Readable[]>();
  for (const r of received) {
    const tenant = r.message.tenant;
    byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), r]);
  }
  const kept: Readable[] = [];
  await Promise.all(
    [...byTenant].map(async ([tenant, messages]) => {
      const granted = await deps.rateLimiter.take(tenant, messages.length, now);
      kept.push(...messages.slice(0, granted));
      const over = messages.slice(granted);
      if (over.length > 0) deps.log.info("rate limit: runs wait", { tenant, waiting: over.length });
      await sendBack(
        deps,
        over.map((r) => ({ received: r, seconds: 1 })),
      );
    }),
  );
  return kept;
}

/**
 * A message of a run under a live lease goes back until the lease ends (hiddenWhileHeld). One
 * of a finished last run re-drives its job's end first, when `endsJob` (endJobOnMessage).
 */
async function keptWhileHeld(
  deps: SchedulerDeps,
  received: Readable,
  now: number,
  endsJob: boolean,
  seed: RunSeed | undefined,
): Promise<boolean> {
  const stored = await deps.runs.getRun(received.message.jobId, received.message.scheduledFor);
  // Marked last first, held or not: a held run not last could be revoked (cancel-previous) or
  // finish not last while this copy waits (markedLast).
  const run = stored && (await markedLast(deps, stored, seed?.final === true));
  const seconds = hiddenWhileHeld(run, now);
  if (seconds === undefined) {
    if (endsJob) await endJobOnMessage(deps, run, now);
    return false;
  }
  deps.log.info("a copy of a held run waits for its lease to end", {
    runId: received.message.runId,
    seconds,
  });
  await sendBack(deps, [{ received, seconds }]);
  return true;
}

export interface Granted {
  readonly lease: Lease;
  readonly leaseExpiresAt: number;
  readonly receiptHandle: string;
  /** The run's job, as read for the lease (the dispatcher finds its target there). */
  readonly job: Job;
}

async function leaseOne(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  workerId: string,
  received: Readable,
  jobs: ReadonlyMap<string, Job>,
): Promise<Granted | undefined> {
  const { message, receiptHandle } = received;
  const now = deps.clock.now();
  const due = dueOf(message);
  const job = jobs.get(message.jobId);
  if (job && !servesTenant(worker, job.tenant)) {
    // Not this worker's to see (a message filed under the wrong lane): back for its own workers.
    await deps.queue.release(receiptHandle);
    return undefined;
  }
  // A run made but not written (decision 0051) is written by whichever step below comes first,
  // from the seed its message carries: only one that names the job's own tenant and type, and,
  // made at create, its own create's request (another with its key made it: decision 0052).
  const carried = seedOf(message, now, 0);
  const own =
    carried &&
    (!job ||
      (carried.tenant === job.tenant &&
        carried.type === job.type &&
        (message.request === undefined || message.request === requestTagOf(job))));
  const seed = own ? seedOf(message, now, retentionMsOf(deps)) : undefined;
  // Whatever the reason, a message of a run under a live lease is kept (keptWhileHeld).
  const drop = async (reason: string, endsJob = false) => {
    if (await keptWhileHeld(deps, received, now, endsJob, seed)) return undefined;
    deps.log.info("dropping run message", { reason, runId: message.runId });
    await deps.queue.delete(receiptHandle);
    return undefined;
  };
  if (!job) return jobNotStored(deps, received, now, seed, drop);
  if (own && !seed && carried) {
    // Made longer ago than finished runs are kept: its item may have run and expired, so it
    // must not be written anew and run; never leased meanwhile, it is recorded missed.
    const missed = await deps.runs.missRun(message.jobId, message.scheduledFor, {
      reason: STALE_SEED_REASON,
      now,
      final: carried.final,
      seed: carried,
    });
    if (missed) await endJobAfter(deps, missed, missed, now);
    // Refused (ended before), a last run's message still ends its job before it goes.
    return drop("made longer ago than runs are kept: recorded missed if never written", !missed);
  }
  // During an upgrade's or a rollback's deploy (writeRunsWhenMade: 1) the job's own made run is
  // written as soon as a lease step sees its message: one this step puts back (an overlap
  // wait) then carries a written run, which code from before decision 0051 can lease.
  if (seed && deps.settings.writeRunsWhenMade === 1) await deps.runs.createRun(seededRun(seed));
  if (job.status === JobStatus.Cancelled) {
    await abandonUnstarted(
      deps,
      message,
      "cancelled",
      "the job was cancelled before the run started",
      now,
      seed,
    );
    return drop("job is cancelled");
  }
  if (job.status === JobStatus.Paused) {
    // Paused jobs start nothing; on resume the missed-run policy looks at later firings. An
    // at-most-once run leased before (its lease lapsed during the pause) may have run: it is
    // recorded lost, never missed, which a resume would run again.
    if (job.delivery === "at-most-once" && (await endRetriedAtMostOnce(deps, message, now, seed)))
      return drop("job is paused; at-most-once run leased before: lost or dead-lettered");
    await abandonUnstarted(deps, message, "missed", PAUSED_RUN_REASON, now, seed);
    return drop("job is paused");
  }

  if (await supersededOneOffRun(deps, job, message, now, seed))
    return drop("a one-off's run its schedule change superseded");

  const startsAt = Math.max(now, due);
  if (job.maxLatenessMs !== undefined && startsAt - message.scheduledFor > job.maxLatenessMs) {
    // Too late to start (its delivery was held up: an outage, a backlog): recorded as missed.
    // Only a first attempt: a retry or a lapsed lease's second try is late by design.
    const reason = `more than maxLateness (${job.maxLatenessMs / 1000} s) late when it could start`;
    // Rare (a late delivery): the run is read to know whether it is the job's last.
    const run = await storedOrMade(deps, message, seed, { markLast: true });
    const missed =
      run && (await deps.runs.missRun(run.jobId, run.scheduledFor, { reason, now, final: run.final, seed }));
    if (missed) {
      await endJobAfter(deps, missed, missed, now);
      return drop("later than the job's maxLateness: missed");
    }
  }
  // A run due while the job's previous run is unfinished: the job's overlap policy decides.
  if (!(await admitOverlap(deps, job, received, startsAt, seed))) return undefined;
  const leaseExpiresAt = startsAt + job.leaseSeconds * 1000;
  const atMostOnce = job.delivery === "at-most-once";
  const leased = await deps.runs.leaseRun(message.jobId, message.scheduledFor, {
    workerId,
    startsAt,
    leaseExpiresAt,
    receiptHandle,
    now,
    firstOnly: atMostOnce,
    seed,
  });
  if (!leased && atMostOnce && (await endRetriedAtMostOnce(deps, message, now, seed))) {
    return drop("at-most-once run leased before: recorded lost or dead-lettered, not run again");
  }
  if (!leased) return drop("run is finished, or gone", true);
  const exhausted = exhaustedByLapses(leased, job, now);
  if (exhausted) {
    const finished = await deps.runs.finishRun(leased.jobId, leased.scheduledFor, leased.fence, {
      ...exhausted,
      final: leased.final,
    });
    await endJobAfter(deps, leased, finished, now);
    // Refused (another finished it first), a last run's message still ends its job before it goes.
    return drop("attempts exhausted by lapsed leases: dead-lettered", !finished);
  }
  deps.log.info("run leased", { runId: leased.runId, fence: leased.fence, workerId });
  const lease: Lease = {
    runId: leased.runId,
    runKey: runKeyOf(leased.jobId, leased.scheduledFor),
    jobId: leased.jobId,
    type: leased.type,
    scheduledFor: formatInstant(leased.scheduledFor),
    startAt: formatInstant(startsAt),
    attempt: leased.attempt,
    fence: leased.fence,
    leaseExpiresAt: formatInstant(leaseExpiresAt),
    final: leased.final,
    payload: job.payload,
  };
  return { lease, leaseExpiresAt, receiptHandle, job };
}
