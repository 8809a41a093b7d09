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
  targetKeyOf,
  timeoutMsOf,
} from "../target";
import { completeRun } from "./complete-run";
import { type Granted, grantLeases } from "./lease-runs";

/** The worker id the dispatcher's leases carry in the run history. */
export const DISPATCHER_WORKER_ID = "jobsched-dispatcher";

/** A delivery must end this long before its lease does, for the completion to be written. */
const COMPLETION_MARGIN_MS = 2_000;

export interface DispatchDeps extends SchedulerDeps {
  readonly targets: TargetInvoker;
  readonly sleep: (ms: number) => Promise<void>;
  /** Deliveries in flight per target, shared by the dispatches one process runs at once. */
  readonly targetSlots: TargetSlots;
}

/** Counts deliveries in flight per target key against each target's limit. */
export class TargetSlots {
  private readonly taken = new Map<string, number>();

  tryTake(key: string, limit: number): boolean {
    const count = this.taken.get(key) ?? 0;
    if (count >= limit) return false;
    this.taken.set(key, count + 1);
    return true;
  }

  release(key: string): void {
    const count = (this.taken.get(key) ?? 1) - 1;
    if (count <= 0) this.taken.delete(key);
    else this.taken.set(key, count);
  }

  inFlight(key: string): number {
    return this.taken.get(key) ?? 0;
  }
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
  const slots = new Map<string, string>(); // runId -> the target key whose slot it holds
  const admit = (message: RunMessage, job: Job | undefined) => {
    if (!job?.target) return true; // the lease step records why it will not run, or it fails below
    const key = targetKeyOf(job.tenant, job.target);
    if (!deps.targetSlots.tryTake(key, concurrencyOf(job.target))) return false;
    slots.set(message.runId, key);
    return true;
  };
  const release = (runId: string) => {
    const key = slots.get(runId);
    if (key === undefined) return;
    slots.delete(runId);
    deps.targetSlots.release(key);
  };
  let granted: Granted[] = [];
  try {
    granted = await grantLeases(deps, dispatcher, DISPATCHER_WORKER_ID, received, {
      receivedVisibilitySeconds,
      admit,
    });
  } finally {
    // Slots of runs admitted but not leased (dropped, held back) are free again.
    for (const runId of [...slots.keys()]) {
      if (!granted.some((g) => g.lease.runId === runId)) release(runId);
    }
  }
  const outcomes = await Promise.all(
    granted.map((g) => deliverOne(deps, dispatcher, g).finally(() => release(g.lease.runId))),
  );
  const succeeded = outcomes.filter((ok) => ok).length;
  return { leased: granted.length, succeeded, failed: granted.length - succeeded };
}

/** Holds the run until it is due, delivers it, and records the outcome; true on success. */
async function deliverOne(deps: DispatchDeps, dispatcher: WorkerCaller, granted: Granted): Promise<boolean> {
  const { lease, job, leaseExpiresAt } = granted;
  const wait = (parseInstant(lease.startAt) ?? 0) - deps.clock.now();
  if (wait > 0) await deps.sleep(wait);
  const result = await deliver(deps, job, lease, leaseExpiresAt);
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
  try {
    await completeRun(deps, dispatcher, lease.runId, body);
  } catch (error) {
    // Revoked (cancel-previous) or lapsed and taken over: the newer fence's outcome stands.
    if (!(error instanceof DomainError)) throw error;
    deps.log.info("push run's outcome not recorded", { runId: lease.runId, reason: error.message });
  }
  if (!result.ok) deps.log.warn("push delivery failed", { runId: lease.runId, error: result.error });
  return result.ok;
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
