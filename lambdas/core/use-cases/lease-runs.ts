import { DELIVERY_LEAD_SECONDS, EARLY_HOLD_MS, MAX_VISIBILITY_SECONDS } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { formatInstant } from "../instant";
import { type Job, JobStatus } from "../job";
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
 */
export async function leaseRuns(deps: SchedulerDeps, body: unknown): Promise<Lease[]> {
  const request = parseWith(leaseRequest, body);
  // The message stays hidden for the hold and the lease, plus a margin, so that a copy only
  // comes back once the lease has lapsed.
  const visibility = deps.settings.leaseSeconds + Math.ceil(EARLY_HOLD_MS / 1000) + 1;
  const leasing: Promise<Granted | undefined>[] = [];
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
      max: request.max - leasing.length,
      visibilitySeconds: visibility,
      waitSeconds,
      held,
      fill: lastPoll,
    });
    for (const r of received) {
      if (r.message) held.set(laneKeyOf(r.message), (held.get(laneKeyOf(r.message)) ?? 0) + 1);
    }
    const now = deps.clock.now();
    const dueTimes = received.flatMap((r) => (r.message ? [dueOf(r.message)] : []));
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
    const inTime = await sendBackLaterRuns(deps, received, handOver, now);
    const batch = await holdBackOverLimit(deps, inTime, now);
    const jobs = await deps.jobs.getJobs(batch.flatMap((r) => (r.message ? [r.message.jobId] : [])));
    leasing.push(...batch.map((r) => leaseOne(deps, request, r, jobs)));
    const timeLeft = handOver === undefined ? 0 : handOver - deps.clock.now();
    // Runs sent back would only come back to this request's next poll: leave them to others.
    const sentBack = inTime.length < received.length;
    if (leasing.length >= request.max || timeLeft < GATHER_POLL_MS || sentBack) break;
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
  return Math.max(0, Math.floor((due - now) / 1000) - 1);
}

/** When a message's run may start: its scheduled instant, or its retry's. */
function dueOf(message: RunMessage): number {
  return Math.max(message.scheduledFor, message.notBefore ?? 0);
}

/**
 * The per-tenant rate limit: runs over a tenant's allowance for this second go back to the
 * queue for a second (their lane keeps them; nothing is dropped).
 */
async function holdBackOverLimit(
  deps: SchedulerDeps,
  received: readonly ReceivedRunMessage[],
  now: number,
): Promise<ReceivedRunMessage[]> {
  if (deps.settings.tenantRunsPerSecond <= 0) return [...received];
  const byTenant = new Map<string, ReceivedRunMessage[]>();
  for (const r of received) {
    const tenant = r.message?.tenant ?? "";
    byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), r]);
  }
  const kept: ReceivedRunMessage[] = [];
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
  received: readonly ReceivedRunMessage[],
  handOver: number | undefined,
  now: number,
): Promise<ReceivedRunMessage[]> {
  if (handOver === undefined) return [...received];
  const later = received.filter((r) => {
    const due = r.message ? dueOf(r.message) : undefined;
    return due !== undefined && due > handOver && due - now <= EARLY_HOLD_MS;
  });
  // One batched call per lane, not one per message (bench-cost: 3.9 visibility changes per run).
  await deps.queue.hide(
    later.map((r) => ({
      receiptHandle: r.receiptHandle,
      seconds: hiddenUntilNearlyDue(r.message ? dueOf(r.message) : now, now),
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
  request: LeaseRequest,
  { message, receiptHandle }: ReceivedRunMessage,
  jobs: ReadonlyMap<string, Job>,
): Promise<Granted | undefined> {
  const drop = async (reason: string) => {
    deps.log.info("dropping run message", { reason, runId: message?.runId });
    await deps.queue.delete(receiptHandle);
    return undefined;
  };
  if (!message) return drop("unreadable message");
  const now = deps.clock.now();
  const due = dueOf(message);
  const early = due - now;
  if (early > EARLY_HOLD_MS) {
    // A repair's resend, or a retry later than SQS can delay a message: hide it again so that it
    // comes back within the hold window (visibility timeouts go up to 12 hours).
    await deps.queue.extend(
      receiptHandle,
      Math.min(MAX_VISIBILITY_SECONDS, Math.floor(early / 1000) - DELIVERY_LEAD_SECONDS),
    );
    return undefined;
  }

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
    await deps.queue.extend(receiptHandle, Math.ceil((leaseExpiresAt - now) / 1000) + 1);
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
