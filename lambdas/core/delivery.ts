import { DELIVERY_LEAD_SECONDS } from "@jobsched/contract";
import { MAX_DELAY_SECONDS, SAFE_VISIBILITY_SECONDS } from "./aws-limits";
import type { RunMessage } from "./ports";
import { type Run, type RunSeed, RunStatus } from "./run";
import { isPushType } from "./target";

/**
 * How many seconds before its due second a run's message becomes visible at the least. The
 * lease step grants the lease as soon as it receives the message and hands it to the worker at
 * once; the worker holds the run until it is due. The database work of a spike is then done in
 * the seconds before it instead of after (decision 0014).
 */
export { DELIVERY_LEAD_SECONDS };

/**
 * A push run's base lead: the dispatcher is a Lambda billed while it holds a run until its
 * second, so its runs become visible within the second before it (SQS rounds the delay down),
 * not five seconds ahead; a dense second still gets the extra lead its density asks for
 * (leadSecondsFor), so that its runs are leased before it comes.
 */
export const PUSH_LEAD_SECONDS = 0;

/** The base lead of a run of this type: a worker's, or the dispatcher's for a push type. */
export function baseLeadSecondsOf(type: string): number {
  return isPushType(type) ? PUSH_LEAD_SECONDS : DELIVERY_LEAD_SECONDS;
}

/**
 * The longest lead: a second this dense or denser becomes visible this early. Bounded so that a
 * lease is never granted further ahead than the lease step accepts (EARLY_HOLD_MS), and well
 * under the sweep's lookahead less a group's sweep period (cloud: 150 - 120 s), so a dense second's messages
 * are sent with their whole lead by a sweep that runs on time.
 */
export const MAX_LEAD_SECONDS = 25;

/**
 * The lead for a second with `runsDue` runs, when the deployment grants about
 * `leasesPerSecond` leases a second: the base lead plus the time it takes to lease them all, so
 * the last of a dense second is leased before the second comes. A second with a few runs gets
 * the base lead or a second more.
 */
export function leadSecondsFor(runsDue: number, leasesPerSecond: number): number {
  const drain = leasesPerSecond > 0 ? Math.ceil(Math.max(0, runsDue) / leasesPerSecond) : 0;
  return Math.min(MAX_LEAD_SECONDS, DELIVERY_LEAD_SECONDS + drain);
}

/**
 * The delay after which a run's message becomes visible: `leadSeconds` (DELIVERY_LEAD_SECONDS
 * unless the second is dense) to one second more before it is due (SQS counts whole seconds,
 * so this rounds down; rounding up would start runs up to a second late). Clamped to what SQS
 * accepts; the sweep only enqueues runs due within its lookahead, far below 15 minutes.
 */
export function delaySecondsUntil(dueAt: number, now: number, leadSeconds = DELIVERY_LEAD_SECONDS): number {
  const seconds = Math.floor((dueAt - now) / 1000) - leadSeconds;
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, seconds));
}

/** The delay after which a message is visible only once `instant` has passed (a lease's end). */
export function delaySecondsAfter(instant: number, now: number): number {
  const seconds = Math.ceil((instant - now) / 1000) + 1;
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, seconds));
}

/**
 * How early a run may be leased and handed to a worker, which holds it until it is due: the
 * longest lead and the second SQS rounds down. A message visible earlier than this (a repair's
 * resend, a retry due later than SQS can delay it, clock skew) is hidden again until its lead.
 */
export const EARLY_HOLD_MS = (MAX_LEAD_SECONDS + 1) * 1000;

/** When a message's run may start: its scheduled instant, or its retry's. */
export function dueOf(message: Pick<RunMessage, "scheduledFor" | "notBefore">): number {
  return Math.max(message.scheduledFor, message.notBefore ?? 0);
}

export function runMessageOf(
  run: Omit<RunMessage, "notBefore" | "backfill" | "madeAt" | "final"> & {
    readonly retryAt?: number | undefined;
    readonly origin?: string | undefined;
  },
): RunMessage {
  return {
    runId: run.runId,
    jobId: run.jobId,
    scheduledFor: run.scheduledFor,
    tenant: run.tenant,
    type: run.type,
    ...(run.retryAt === undefined ? {} : { notBefore: run.retryAt }),
    ...(run.origin === "backfill" ? { backfill: true as const } : {}),
  };
}

/**
 * The message of a run made but not written (decision 0051): it carries what the run's first
 * write needs (when it was made, whether it is its job's last).
 */
export function madeRunMessageOf(run: RunSeed, request?: string): RunMessage {
  return {
    ...runMessageOf(run),
    madeAt: run.createdAt,
    ...(run.final ? { final: true as const } : {}),
    ...(request === undefined ? {} : { request }),
  };
}

/**
 * The tag a run made at create carries of the request that made it (decision 0052): enough of
 * the request's hash that two requests with the same idempotency key and different bodies are
 * told apart (72 bits).
 */
export function requestTagOf(job: { readonly requestHash: string }): string {
  return job.requestHash.slice(0, 12);
}

/**
 * The seed a message carries for a run made but not written, or undefined: a message of a
 * written run (older code's, a retry's, a manual run's), or one made longer ago than finished
 * runs are kept (`retentionMs`; 0: kept for ever), whose item may have expired after it ran:
 * such a copy must not write the run anew.
 */
export function seedOf(message: RunMessage, now: number, retentionMs: number): RunSeed | undefined {
  if (message.madeAt === undefined) return undefined;
  if (retentionMs > 0 && message.madeAt < now - retentionMs) return undefined;
  return {
    runId: message.runId,
    jobId: message.jobId,
    tenant: message.tenant,
    type: message.type,
    scheduledFor: message.scheduledFor,
    final: message.final === true,
    createdAt: message.madeAt,
  };
}

/**
 * How long a message of a run under a live lease is hidden, rather than deleted: until the
 * lease ends and a second (at most what SQS allows). It may be the holder's own message shown
 * early (a visibility change that failed, or SQS's 12 hours reached under heartbeats), and a
 * scheduled run has no repair-index entry to fall back on (decision 0043): when the lease
 * ends, it is dropped if the run finished, or leases the run if the lease lapsed. Undefined
 * when the run is under no live lease.
 */
export function hiddenWhileHeld(run: Pick<Run, "status" | "leaseExpiresAt"> | undefined, now: number) {
  const heldUntil = run?.status === RunStatus.Leased ? (run.leaseExpiresAt ?? 0) : 0;
  if (heldUntil <= now) return undefined;
  return Math.min(SAFE_VISIBILITY_SECONDS, Math.ceil((heldUntil - now) / 1000) + 1);
}
