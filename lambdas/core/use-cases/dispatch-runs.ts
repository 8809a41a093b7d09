import { FUNCTION_TIMEOUT_SECONDS } from "../../definitions/functions";
import type { WorkerCaller } from "../caller";
import { dueOf } from "../delivery";
import { COMPLETION_MARGIN_MS, DeliveryBudget } from "../delivery-deadline";
import type { SchedulerDeps } from "../deps";
import { DomainError } from "../errors";
import { parseInstant } from "../instant";
import type { Job } from "../job";
import type { ReceivedRunMessage, RunMessage } from "../ports";
import {
  concurrencyOf,
  type DeliveryResult,
  type RunEnvelope,
  type TargetInvoker,
  type TargetSlots,
  targetKeyOf,
  timeoutMsOf,
} from "../target";
import type { TenantShare } from "../tenant-shares";
import { completeRun, type MessageDeletion } from "./complete-run";
import { giveBackRun } from "./give-back-run";
import { type Granted, grantLeases } from "./lease-runs";
import { gaveBackThinBatch, setAsideOverShare, withinShare } from "./share-admission";

/** The worker id the dispatcher's leases carry in the run history. */
export const DISPATCHER_WORKER_ID = "jobsched-dispatcher";

/** The longest an outcome waits for the deliveries beside it (TargetSlots.quiet). */
const QUIET_WAIT_MS = 3_000;

export interface DispatchDeps extends SchedulerDeps {
  readonly targets: TargetInvoker;
  readonly sleep: (ms: number) => Promise<void>;
  /** Deliveries in flight per target, shared by the dispatches one process runs at once. */
  readonly targetSlots: TargetSlots;
  /** This dispatch's part in its process's tenant shares (decision 0039), if it has one. */
  readonly tenantShare?: TenantShare;
}

export interface DispatchSummary {
  readonly leased: number;
  readonly succeeded: number;
  readonly failed: number;
  /** Leased, then given back undelivered: no place at the target came in time (not an attempt). */
  readonly returned: number;
  /**
   * Runs whose outcome could not be written (a throttled or failed write): their messages are
   * kept, not deleted, and come back when their lease lapses.
   */
  readonly unrecorded: number;
}

/**
 * The dispatcher (decision 0029): push runs, as their messages arrive from the push queue, go
 * through the very lease step worker runs go through (cancelled, paused, late, overlapping,
 * at-most-once, attempts exhausted: the same rules, the same fence), then to their target
 * once due, and their outcome through the very completion a worker's goes through (retries
 * with backoff and jitter, Retry-After as a floor, dead letters, the job's end).
 *
 * Per-target concurrency: one dispatcher leases at most the target's `concurrency` runs for
 * one endpoint at a time; the rest go back to the queue for a second, their fences untouched,
 * so a slow endpoint holds a bounded share of a dispatcher, and the runs of other endpoints in
 * the same batch are delivered beside its runs, not after them.
 *
 * Time (delivery-deadline.ts): everything is done by `deadline`, the function's remaining time
 * as the handler hands it in. Runs that could not be delivered and recorded by then are not
 * leased (back to the queue for a second); a leased run whose place at its target does not
 * come in time is given back, its attempt not counted (give-back-run.ts).
 */
export async function dispatchRuns(
  deps: DispatchDeps,
  received: readonly ReceivedRunMessage[],
  receivedVisibilitySeconds: number,
  /** The instant by which this invocation is done; by default the function's timeout from now. */
  deadline: number = deps.clock.now() + FUNCTION_TIMEOUT_SECONDS.dispatcher * 1000,
): Promise<DispatchSummary> {
  const tenants = [...new Set(received.flatMap((r) => (r.message ? [r.message.tenant] : [])))];
  const dispatcher: WorkerCaller = { principal: DISPATCHER_WORKER_ID, tenants };
  // A target whose deliveries fill its concurrency (a slow endpoint) gets no more runs leased
  // here: they go back to the queue for a second, their fences untouched. Runs leased ahead of
  // their second do not count until they are delivered, so a spike to a fast endpoint is held
  // in full and delivered as slots turn over.
  const hasRoom = (_message: RunMessage, job: Job | undefined) =>
    !job?.target ||
    deps.targetSlots.inFlight(targetKeyOf(job.tenant, job.target)) < concurrencyOf(job.target);
  const inTime = withinDeadline(deps, deadline);
  const admit = (message: RunMessage, job: Job | undefined) => hasRoom(message, job) && inTime(message, job);
  const mine = await setAsideOverShare(deps, received, deps.tenantShare);
  if (await gaveBackThinBatch(deps, mine))
    return { leased: 0, succeeded: 0, failed: 0, returned: 0, unrecorded: 0 };
  const granted = await grantLeases(deps, dispatcher, DISPATCHER_WORKER_ID, mine, {
    receivedVisibilitySeconds,
    admit: withinShare(admit, deps.tenantShare),
  });
  // The delivered runs' messages are deleted together, one call for the batch (as a worker's
  // batched completions are): a message that outlives its run only meets a finished run.
  const handles: string[] = [];
  const collect = async (_deps: SchedulerDeps, _runId: string, handle: string | undefined) => {
    if (handle !== undefined) handles.push(handle);
  };
  const deliverBy = deadline - COMPLETION_MARGIN_MS;
  const outcomes = await settleEach(deps, granted, (g) =>
    deliverOne(deps, dispatcher, g, collect, deliverBy),
  );
  const undeleted = await deps.queue.deleteBatch(handles);
  if (undeleted.length > 0)
    deps.log.warn("could not delete some pushed runs' messages", { count: undeleted.length });
  const count = (outcome: Outcome | undefined) => outcomes.filter((o) => o === outcome).length;
  return {
    leased: granted.length,
    succeeded: count("succeeded"),
    failed: count("failed"),
    returned: count("returned"),
    unrecorded: count(undefined),
  };
}

/** What became of a leased run: delivered, failed (its outcome recorded), or given back undelivered. */
type Outcome = "succeeded" | "failed" | "returned";

/**
 * The lease step's admission by time: a run is leased only if it can be held until its second,
 * wait for a place at its target and be delivered within the target's timeout, all of its
 * target's deliveries counted, in time for its outcome to be written by the deadline.
 */
function withinDeadline(deps: DispatchDeps, deadline: number) {
  const slots = deps.targetSlots;
  const busy = (key: string) => slots.inFlight(key) + slots.queuedFor(key);
  const budget = new DeliveryBudget(deps.clock.now(), deadline, busy);
  return (message: RunMessage, job: Job | undefined) =>
    !job?.target ||
    budget.admits(
      targetKeyOf(job.tenant, job.target),
      concurrencyOf(job.target),
      timeoutMsOf(job.target),
      dueOf(message),
    );
}

/**
 * Every delivery and its outcome run to their end, whatever the others do: one outcome write
 * that throws (a throttle) must neither cut the batch short while other deliveries are in
 * flight (their outcomes, other tenants' too, would never be written) nor leave a run held
 * until its second to be delivered by a later invocation, after its lease lapsed. A run whose
 * outcome could not be written is logged and counted (undefined); its message is not deleted,
 * so it comes back when its lease lapses (the handler reports it as a batch item failure).
 */
async function settleEach(
  deps: DispatchDeps,
  granted: readonly Granted[],
  deliver: (g: Granted) => Promise<Outcome>,
): Promise<Array<Outcome | undefined>> {
  const settled = await Promise.allSettled(granted.map(deliver));
  return settled.map((s, i) => {
    if (s.status === "fulfilled") return s.value;
    deps.log.error("push run's outcome could not be written; its message comes back", {
      runId: granted[i]?.lease.runId,
      error: String(s.reason),
    });
    return undefined;
  });
}

/**
 * Holds the run until it is due, delivers it by `deliverBy`, and records the outcome; gives it
 * back when no place at its target came in time.
 */
async function deliverOne(
  deps: DispatchDeps,
  dispatcher: WorkerCaller,
  granted: Granted,
  deleting: MessageDeletion,
  deliverBy: number,
): Promise<Outcome> {
  const { lease, job, leaseExpiresAt } = granted;
  const wait = (parseInstant(lease.startAt) ?? 0) - deps.clock.now();
  if (wait > 0) await deps.sleep(wait);
  // The delivery ends before the lease does and by the invocation's deadline, in time for the outcome.
  const leaseEnd = leaseExpiresAt - COMPLETION_MARGIN_MS;
  const result = await deliverInTurn(deps, job, lease, leaseEnd, deliverBy);
  if (result === undefined) {
    await giveBackRun(deps, granted);
    return "returned";
  }
  const body = result.ok
    ? { fence: lease.fence, result: "succeeded", final: lease.final }
    : {
        fence: lease.fence,
        result: "failed",
        retryable: result.retryable,
        error: result.error.slice(0, 4096),
        final: lease.final,
        ...(result.retryAfterSeconds === undefined
          ? {}
          : { retryAfter: Math.min(86_400, Math.max(0, Math.ceil(result.retryAfterSeconds))) }),
      };
  // Deliveries first: the outcome waits (a moment, well inside the lease) for the deliveries
  // in flight or waiting, so that at a spike bookkeeping does not delay the later runs.
  await deps.targetSlots.quiet(Math.min(QUIET_WAIT_MS, Math.min(leaseEnd, deliverBy) - deps.clock.now()));
  try {
    await completeRun(deps, dispatcher, lease.runId, body, deleting);
  } catch (error) {
    // Revoked (cancel-previous) or lapsed and taken over: the newer fence's outcome stands.
    if (!(error instanceof DomainError)) throw error;
    deps.log.info("push run's outcome not recorded", { runId: lease.runId, reason: error.message });
  }
  // A retry is routine (info); a dead letter is warned about where it is recorded.
  if (!result.ok) deps.log.info("push delivery failed", { runId: lease.runId, error: result.error });
  return result.ok ? "succeeded" : "failed";
}

/**
 * Delivers once a slot of the target's concurrency is free; undefined (not delivered: to be
 * given back) when none frees in time. In time: for the target's whole timeout before
 * `deliverBy` (the invocation's), and for at least a second before `leaseEnd` (a lease shorter
 * than the timeout cuts the delivery short, as the job asked).
 */
async function deliverInTurn(
  deps: DispatchDeps,
  job: Job,
  lease: Granted["lease"],
  leaseEnd: number,
  deliverBy: number,
): Promise<DeliveryResult | undefined> {
  const endBy = Math.min(leaseEnd, deliverBy);
  if (!job.target) return deliver(deps, job, lease, endBy);
  const key = targetKeyOf(job.tenant, job.target);
  const waitMs = Math.min(leaseEnd - 1_000, deliverBy - timeoutMsOf(job.target)) - deps.clock.now();
  if (waitMs < 0 || !(await deps.targetSlots.acquire(key, concurrencyOf(job.target), waitMs))) {
    return undefined;
  }
  try {
    return await deliver(deps, job, lease, endBy);
  } finally {
    deps.targetSlots.release(key);
  }
}

async function deliver(
  deps: DispatchDeps,
  job: Job,
  lease: Granted["lease"],
  endBy: number,
): Promise<DeliveryResult> {
  if (!job.target) return { ok: false, retryable: false, error: "the job has no target to deliver to" };
  const envelope: RunEnvelope = {
    runKey: lease.runKey,
    runId: lease.runId,
    jobId: lease.jobId,
    fence: lease.fence,
    scheduledFor: lease.scheduledFor,
    attempt: lease.attempt,
    payload: lease.payload,
  };
  const left = endBy - deps.clock.now();
  const timeoutMs = Math.max(1_000, Math.min(timeoutMsOf(job.target), left));
  try {
    return await deps.targets.deliver(job.target, envelope, { tenant: job.tenant, timeoutMs });
  } catch (error) {
    return { ok: false, retryable: true, error: `delivery failed: ${String(error)}` };
  }
}
