import type { WorkerCaller } from "../caller";
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
import { type Granted, grantLeases } from "./lease-runs";
import { setAsideOverShare, withinShare } from "./share-admission";

/** The worker id the dispatcher's leases carry in the run history. */
export const DISPATCHER_WORKER_ID = "jobsched-dispatcher";

/** The longest an outcome waits for the deliveries beside it (TargetSlots.quiet). */
const QUIET_WAIT_MS = 3_000;

/** A delivery must end this long before its lease does, for the completion to be written. */
const COMPLETION_MARGIN_MS = 2_000;

export interface DispatchDeps extends SchedulerDeps {
  readonly targets: TargetInvoker;
  readonly sleep: (ms: number) => Promise<void>;
  /** Deliveries in flight per target, shared by the dispatches one process runs at once. */
  readonly targetSlots: TargetSlots;
  /** This dispatch's part in its process's tenant shares (decision 0037), if it has one. */
  readonly tenantShare?: TenantShare;
}

export interface DispatchSummary {
  readonly leased: number;
  readonly succeeded: number;
  readonly failed: number;
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
 */
export async function dispatchRuns(
  deps: DispatchDeps,
  received: readonly ReceivedRunMessage[],
  receivedVisibilitySeconds: number,
): Promise<DispatchSummary> {
  const tenants = [...new Set(received.flatMap((r) => (r.message ? [r.message.tenant] : [])))];
  const dispatcher: WorkerCaller = { principal: DISPATCHER_WORKER_ID, tenants };
  // A target whose deliveries fill its concurrency (a slow endpoint) gets no more runs leased
  // here: they go back to the queue for a second, their fences untouched. Runs leased ahead of
  // their second do not count until they are delivered, so a spike to a fast endpoint is held
  // in full and delivered as slots turn over.
  const admit = (_message: RunMessage, job: Job | undefined) =>
    !job?.target ||
    deps.targetSlots.inFlight(targetKeyOf(job.tenant, job.target)) < concurrencyOf(job.target);
  const mine = await setAsideOverShare(deps, received, deps.tenantShare);
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
  const outcomes = await Promise.all(granted.map((g) => deliverOne(deps, dispatcher, g, collect)));
  const undeleted = await deps.queue.deleteBatch(handles);
  if (undeleted.length > 0)
    deps.log.warn("could not delete some pushed runs' messages", { count: undeleted.length });
  const succeeded = outcomes.filter((ok) => ok).length;
  return { leased: granted.length, succeeded, failed: granted.length - succeeded };
}

/** Holds the run until it is due, delivers it, and records the outcome; true on success. */
async function deliverOne(
  deps: DispatchDeps,
  dispatcher: WorkerCaller,
  granted: Granted,
  deleting: MessageDeletion,
): Promise<boolean> {
  const { lease, job, leaseExpiresAt } = granted;
  const wait = (parseInstant(lease.startAt) ?? 0) - deps.clock.now();
  if (wait > 0) await deps.sleep(wait);
  const result = await deliverInTurn(deps, job, lease, leaseExpiresAt);
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
  await deps.targetSlots.quiet(
    Math.min(QUIET_WAIT_MS, leaseExpiresAt - deps.clock.now() - COMPLETION_MARGIN_MS),
  );
  try {
    await completeRun(deps, dispatcher, lease.runId, body, deleting);
  } catch (error) {
    // Revoked (cancel-previous) or lapsed and taken over: the newer fence's outcome stands.
    if (!(error instanceof DomainError)) throw error;
    deps.log.info("push run's outcome not recorded", { runId: lease.runId, reason: error.message });
  }
  // A retry is routine (info); a dead letter is warned about where it is recorded.
  if (!result.ok) deps.log.info("push delivery failed", { runId: lease.runId, error: result.error });
  return result.ok;
}

/** Delivers once a slot of the target's concurrency is free; fails retryably if none frees in time. */
async function deliverInTurn(
  deps: DispatchDeps,
  job: Job,
  lease: Granted["lease"],
  leaseExpiresAt: number,
): Promise<DeliveryResult> {
  if (!job.target) return deliver(deps, job, lease, leaseExpiresAt);
  const key = targetKeyOf(job.tenant, job.target);
  // At the least a second of the lease is left for the delivery itself.
  const waitMs = leaseExpiresAt - deps.clock.now() - COMPLETION_MARGIN_MS - 1_000;
  if (!(await deps.targetSlots.acquire(key, concurrencyOf(job.target), waitMs))) {
    return {
      ok: false,
      retryable: true,
      error: `the target's ${concurrencyOf(job.target)} concurrent deliveries stayed busy until the lease ran short`,
    };
  }
  try {
    return await deliver(deps, job, lease, leaseExpiresAt);
  } finally {
    deps.targetSlots.release(key);
  }
}

async function deliver(
  deps: DispatchDeps,
  job: Job,
  lease: Granted["lease"],
  leaseExpiresAt: number,
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
  const left = leaseExpiresAt - deps.clock.now() - COMPLETION_MARGIN_MS;
  const timeoutMs = Math.max(1_000, Math.min(timeoutMsOf(job.target), left));
  try {
    return await deps.targets.deliver(job.target, envelope, { tenant: job.tenant, timeoutMs });
  } catch (error) {
    return { ok: false, retryable: true, error: `delivery failed: ${String(error)}` };
  }
}
