import { API_GATEWAY_TIMEOUT_MS, SAFE_VISIBILITY_SECONDS } from "../aws-limits";
import { servesTenant, type WorkerCaller } from "../caller";
import { DELIVERY_LEAD_SECONDS, EARLY_HOLD_MS } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { formatInstant } from "../instant";
import { type Job, JobStatus } from "../job";
import { LEASE_RESPONSE_BUDGET_BYTES, leaseResponseBytes, withinBudget } from "../lease-budget";
import { laneKeyOf, type ReceivedRunMessage, type RunMessage } from "../ports";
import { RunStatus, runKeyOf } from "../run";
import { type LeaseRequest, leaseRequest } from "../schemas";
import { parseWith } from "../validation";
import { endJobAfter } from "./end-job";

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
 * A run whose leases lapsed maxAttempts times without a completion is dead-lettered.
 * With a per-tenant rate limit, runs over a tenant's limit wait a second in the queue.
 *
 * A message shows up to a second before its run is due (SQS delays are whole seconds). Its
 * lease is granted at once, while the worker waits, and handed over on the due instant: the
 * database work of a top-of-the-hour spike is done in the second before it.
 *
 * The worker sees only the tenants it serves (its binding): their lanes are the only ones
 * polled. No single run can break a request for the others in it: runs past the response's
 * byte budget go back untouched, a run due beyond the hold window is hidden again without
 * setting the hand-over, one run's visibility change failing is that run's alone, and the
 * whole request answers within REQUEST_BUDGET_MS whatever it receives.
 */
export async function leaseRuns(deps: SchedulerDeps, worker: WorkerCaller, body: unknown): Promise<Lease[]> {
  const request = parseWith(leaseRequest, body);
  const deadline = deps.clock.now() + REQUEST_BUDGET_MS;
  // The message stays hidden for the hold and the lease, plus a margin, so that a copy only
  // comes back once the lease has lapsed.
  const visibility = deps.settings.leaseSeconds + Math.ceil(EARLY_HOLD_MS / 1000) + 1;
  const leasing: Promise<Granted | undefined>[] = [];
  const budget = { left: LEASE_RESPONSE_BUDGET_BYTES };
  let handOver: number | undefined;
  let waitSeconds = request.waitSeconds;
  const held = new Map<string, number>();
  // While the hand-over is more than a poll away, keep gathering runs (up to max) with short
  // long-polls: a spike's runs are then leased in the seconds before they are due. A poll costs
  // the same whether the request is holding or the worker would have asked again.
  for (;;) {
    // While gathering, each lane gets only its fair share of the request, so runs of a lane
    // that becomes visible a moment later still find room; the last poll fills up.
    const lastPoll = handOver === undefined || handOver - deps.clock.now() < 2 * GATHER_POLL_MS;
    const received = await deps.queue.receive({
      types: request.types,
      tenants: worker.tenants,
      max: request.max - leasing.length,
      visibilitySeconds: visibility,
      // No poll runs past the request's deadline.
      waitSeconds: Math.max(0, Math.min(waitSeconds, Math.floor((deadline - deps.clock.now()) / 1000) - 1)),
      held,
      fill: lastPoll,
    });
    for (const r of received) {
      if (r.message) held.set(laneKeyOf(r.message), (held.get(laneKeyOf(r.message)) ?? 0) + 1);
    }
    const now = deps.clock.now();
    // Only runs this request can hand over in time take part; the others never set its time.
    const near = await setAsideWhatCannotBeHandedOver(deps, worker, received, deadline, now);
    const dueTimes = near.map((r) => dueOf(r.message));
    const earliest =
      dueTimes.length > 0 ? Math.max(now, Math.min(...dueTimes)) + HAND_OVER_SPREAD_MS : undefined;
    if (handOver !== undefined && earliest !== undefined && earliest < handOver - HAND_OVER_SPREAD_MS) {
      // An early bird: a run that showed up after the batch was gathered (hidden until just
      // before it is due by another request, or a retry) but is due before it. Holding it for
      // the batch would start it late, so the batch's later runs go back and it sets the time.
      handOver = earliest;
      const kept = await takeBackLaterLeases(deps, await Promise.all(leasing), handOver, now);
      leasing.length = 0;
      leasing.push(...kept.map(async (g) => g));
    }
    handOver ??= earliest;
    const inTime = await sendBackLaterRuns(deps, near, handOver, now);
    const jobs = await deps.jobs.getJobs(inTime.map((r) => r.message.jobId));
    // Runs past the response's byte budget go back at once, for another request; no fence moved.
    const { fits, overflow } = withinBudget(
      inTime,
      (r) => leaseResponseBytes(jobs.get(r.message.jobId)?.payload),
      budget,
    );
    await deps.queue.hide(overflow.map((r) => ({ receiptHandle: r.receiptHandle, seconds: 0 })));
    const batch = await holdBackOverLimit(deps, fits, now);
    leasing.push(...batch.map((r) => leaseOne(deps, worker, request, r, jobs)));
    const timeLeft = handOver === undefined ? 0 : handOver - deps.clock.now();
    // Runs sent back would only come back to this request's next poll: leave them to others.
    const sentBack = inTime.length < near.length || overflow.length > 0;
    const outOfTime = deps.clock.now() + GATHER_POLL_MS > deadline;
    if (leasing.length >= request.max || timeLeft < GATHER_POLL_MS || sentBack || outOfTime) break;
    waitSeconds = 1;
  }
  const granted = (await Promise.all(leasing)).filter((lease): lease is Granted => lease !== undefined);
  const startsAt = Math.max(0, ...granted.map((g) => g.startsAt));
  const wait = startsAt - deps.clock.now();
  if (wait > 0) await deps.clock.sleep(wait); // start on the due instant, not before
  return granted.map((g) => g.lease);
}

/**
 * Whole seconds to hide a run that goes back to the queue so that it shows up about a second
 * before it is due (0: at once). Released at once, it would be received and sent back again by
 * every gathering request.
 */
function hiddenUntilNearlyDue(due: number, now: number): number {
  return Math.min(SAFE_VISIBILITY_SECONDS, Math.max(0, Math.floor((due - now) / 1000) - 1));
}

/** When a message's run may start: its scheduled instant, or its retry's. */
function dueOf(message: RunMessage): number {
  return Math.max(message.scheduledFor, message.notBefore ?? 0);
}

/**
 * The longest a lease request takes: polls end and runs are handed over by then. Seven
 * seconds under API Gateway's limit leave room for the DynamoDB and SQS calls around them.
 */
const REQUEST_BUDGET_MS = API_GATEWAY_TIMEOUT_MS - 7_000;

type Readable = ReceivedRunMessage & { readonly message: RunMessage };

/**
 * Sorts out the received messages this request cannot hand over, before anything is leased:
 * unreadable ones are deleted; runs of tenants the worker does not serve (no lane of theirs is
 * polled, so only a misfiled message) go back at once; runs due beyond the hold window (a
 * retry or a repair's resend due later than SQS can delay a message) are hidden again until
 * DELIVERY_LEAD_SECONDS before they are due (at most what SQS allows, 12 hours; later ones
 * are hidden again then); runs due after the request's deadline come back just before they
 * are due. Returns the rest: runs this request may hold and hand over.
 */
async function setAsideWhatCannotBeHandedOver(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  received: readonly ReceivedRunMessage[],
  deadline: number,
  now: number,
): Promise<Readable[]> {
  const near: Readable[] = [];
  const hide: Array<{ receiptHandle: string; seconds: number }> = [];
  const unreadable: string[] = [];
  for (const r of received) {
    if (!r.message) unreadable.push(r.receiptHandle);
    else if (!servesTenant(worker, r.message.tenant))
      hide.push({ receiptHandle: r.receiptHandle, seconds: 0 });
    else if (dueOf(r.message) - now > EARLY_HOLD_MS) {
      const seconds = Math.floor((dueOf(r.message) - now) / 1000) - DELIVERY_LEAD_SECONDS;
      hide.push({ receiptHandle: r.receiptHandle, seconds: Math.min(SAFE_VISIBILITY_SECONDS, seconds) });
    } else if (dueOf(r.message) > deadline - HAND_OVER_SPREAD_MS) {
      hide.push({ receiptHandle: r.receiptHandle, seconds: hiddenUntilNearlyDue(dueOf(r.message), now) });
    } else near.push(r as Readable);
  }
  if (unreadable.length > 0) deps.log.info("dropping unreadable run messages", { count: unreadable.length });
  await Promise.all([
    deps.queue.hide(hide),
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
      await deps.queue.hide(over.map((r) => ({ receiptHandle: r.receiptHandle, seconds: 1 })));
    }),
  );
  return kept;
}

/** Runs due within this much of a batch's earliest are handed over together. */
const HAND_OVER_SPREAD_MS = 250;
/** A one-second long poll plus its round trip: gathering stops when less is left. */
const GATHER_POLL_MS = 1_300;

/**
 * A request's runs are handed over together, when the earliest is due; runs due noticeably
 * after that go back to the queue for another request, so that no run waits for a later one.
 * (bench-cost found the cost of releasing them at once: 13 visibility changes per run.)
 */
async function sendBackLaterRuns(
  deps: SchedulerDeps,
  received: readonly Readable[],
  handOver: number | undefined,
  now: number,
): Promise<Readable[]> {
  if (handOver === undefined) return [...received];
  const later = received.filter((r) => dueOf(r.message) > handOver);
  // One batched call per lane, not one per message (bench-cost: 3.9 visibility changes per run).
  await deps.queue.hide(
    later.map((r) => ({
      receiptHandle: r.receiptHandle,
      seconds: hiddenUntilNearlyDue(dueOf(r.message), now),
    })),
  );
  return received.filter((r) => !later.includes(r));
}

interface Granted {
  readonly lease: Lease;
  readonly startsAt: number;
  /** What taking the lease back needs: the run's key, when it may start, its message. */
  readonly scheduledFor: number;
  readonly due: number;
  readonly receiptHandle: string;
}

/**
 * Keeps the leases that start by `handOver`; takes back the others (pending again, their
 * messages hidden until about a second before they are due, as sendBackLaterRuns does).
 * A lease that cannot be taken back lapses and is retried, like every undelivered lease.
 */
async function takeBackLaterLeases(
  deps: SchedulerDeps,
  granted: ReadonlyArray<Granted | undefined>,
  handOver: number,
  now: number,
): Promise<Granted[]> {
  const held = granted.filter((g): g is Granted => g !== undefined);
  const later = held.filter((g) => g.startsAt > handOver);
  await Promise.all(
    later.map((g) => deps.runs.unleaseRun(g.lease.jobId, g.scheduledFor, g.lease.fence, g.due)),
  );
  await deps.queue.hide(
    later.map((g) => ({
      receiptHandle: g.receiptHandle,
      seconds: hiddenUntilNearlyDue(g.due, now),
    })),
  );
  if (later.length > 0) deps.log.info("leases taken back for an earlier run", { runs: later.length });
  return held.filter((g) => g.startsAt <= handOver);
}

async function leaseOne(
  deps: SchedulerDeps,
  worker: WorkerCaller,
  request: LeaseRequest,
  { message, receiptHandle }: Readable,
  jobs: ReadonlyMap<string, Job>,
): Promise<Granted | undefined> {
  const drop = async (reason: string) => {
    deps.log.info("dropping run message", { reason, runId: message.runId });
    await deps.queue.delete(receiptHandle);
    return undefined;
  };
  const now = deps.clock.now();
  const due = dueOf(message);

  const job = jobs.get(message.jobId);
  if (job && !servesTenant(worker, job.tenant)) {
    // Not this worker's to see (a message filed under the wrong lane): back for its own workers.
    await deps.queue.release(receiptHandle);
    return undefined;
  }
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

  const startsAt = Math.max(now, due);
  if (job.maxLatenessMs !== undefined && startsAt - message.scheduledFor > job.maxLatenessMs) {
    // Too late to start (its delivery was held up: an outage, a backlog): recorded as missed.
    // Only a first attempt: a retry or a lapsed lease's second try is late by design.
    const reason = `more than maxLateness (${job.maxLatenessMs / 1000} s) late when it could start`;
    const missed = await deps.runs.missRun(message.jobId, message.scheduledFor, reason, now);
    if (missed) {
      await endJobAfter(deps, missed.jobId, missed, now);
      return drop("later than the job's maxLateness: missed");
    }
  }
  const leaseExpiresAt = startsAt + job.leaseSeconds * 1000;
  const leased = await deps.runs.leaseRun(message.jobId, message.scheduledFor, {
    workerId: request.workerId,
    startsAt,
    leaseExpiresAt,
    receiptHandle,
    now,
  });
  // Finished, held by a live lease (this is a second copy: the holder's own message comes back
  // if it fails), or gone.
  if (!leased) return drop("run is finished, held by another worker, or gone");
  if (leased.attempt > job.maxAttempts) {
    // Every attempt so far lapsed (workers died or hung): this one is not handed out.
    const error = `${job.maxAttempts} lease(s) lapsed without a completion`;
    const finished = await deps.runs.finishRun(leased.jobId, leased.scheduledFor, leased.fence, {
      status: RunStatus.DeadLettered,
      error: leased.error ?? error,
      now,
    });
    await endJobAfter(deps, leased.jobId, finished, now);
    return drop("attempts exhausted by lapsed leases: dead-lettered");
  }
  if (job.leaseSeconds !== deps.settings.leaseSeconds) {
    // Capped at what SQS allows after a receive (leaseSeconds is bounded so the cap only bites
    // on jobs stored before that bound). If the change fails, the lease still holds in the
    // table: a copy that shows up early finds it live and is dropped, and should the worker die
    // the repair pass re-sends the run once the lease has lapsed. The other runs are unaffected.
    const seconds = Math.min(SAFE_VISIBILITY_SECONDS, Math.ceil((leaseExpiresAt - now) / 1000) + 1);
    await deps.queue.extend(receiptHandle, seconds).catch((error: unknown) => {
      deps.log.warn("could not extend the run's message to its lease", {
        runId: leased.runId,
        seconds,
        error: String(error),
      });
    });
  }

  deps.log.info("run leased", { runId: leased.runId, fence: leased.fence, workerId: request.workerId });
  const lease: Lease = {
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
  return { lease, startsAt, scheduledFor: leased.scheduledFor, due, receiptHandle };
}
