import type { OverlapPolicy } from "@jobsched/contract";
import type { AwsFaultEvent } from "../../local/aws-faults";

/** What the crash-loop test's client, workers and accounting share. */
export const CHAOS_TYPE = "chaos.work";

/** How a chaos run behaves in the worker. */
export interface ChaosPayload {
  /** Kind of job, for the report. */
  readonly kind: string;
  /** How long the handler works. */
  readonly ms: number;
  /** Attempts 1..failAttempts fail with a retryable error. */
  readonly failAttempts: number;
  /** Fail every attempt with a PermanentError. */
  readonly permanent: boolean;
  /**
   * Executions started from this instant on work `shortMs` instead of `ms`: the overlap jobs'
   * runs outlast a minute early in the window and are short at its end (a late firing, or a
   * repeat after a lapsed lease, too), so the drain stays short.
   */
  readonly shortFrom?: number;
  readonly shortMs?: number;
}

/** An execution's working time in the worker, by when it starts. */
export function workMs(payload: ChaosPayload, startedAt: number): number {
  return payload.shortFrom !== undefined && startedAt >= payload.shortFrom
    ? (payload.shortMs ?? payload.ms)
    : payload.ms;
}

/** One line of a worker's log: an execution began, or how its completion went. */
export type WorkerEvent =
  | {
      readonly e: "start";
      readonly runId: string;
      readonly fence: number;
      readonly attempt: number;
      readonly worker: string;
      readonly at: number;
    }
  | {
      readonly e: "done";
      readonly runId: string;
      readonly fence: number;
      readonly worker: string;
      readonly result: "succeeded" | "failed" | "not-started";
      /** `push-answered`: a push target's own failure (the receiver answered 5xx), not a completion. */
      readonly status: number | "lease-lost" | "unreachable" | "given-up" | "push-answered";
      readonly sentAt: number;
      readonly at: number;
    };

/** A job the client got a 2xx for, with what it did to it afterwards. */
export interface AcceptedJob {
  readonly jobId: string;
  /** Which dev tenant created it. */
  readonly tenant: ChaosTenant;
  readonly schedule: "once" | "cron";
  readonly kind: string;
  /** One-off: its runAt. Cron: creation answered at (the first firing is after it). */
  readonly runAt?: number;
  readonly createdSentAt: number;
  readonly endAt?: number;
  cancelSentAt?: number;
  cancelAnsweredAt?: number;
  pausedAt?: number;
  resumedAt?: number;
  /** When the resume was answered: a firing in the pause may be recorded missed until then. */
  resumeAnsweredAt?: number;
  /**
   * The job's overlapPolicy and delivery from its create on, one entry per create or PATCH that
   * set them (PATCH /api/v1/jobs/{id} while the loop runs). Absent: allow, and the delivery
   * its kind implies (jobSettings, job-settings.ts).
   */
  settings?: JobSettings[];
}

export type Delivery = "at-least-once" | "at-most-once";

/** A job's overlap policy and delivery mode as one create or PATCH set them, with its timing. */
export interface JobSettings {
  readonly overlapPolicy: OverlapPolicy;
  readonly delivery: Delivery;
  readonly sentAt: number;
  readonly answeredAt: number;
}

/**
 * A fault the crash loop injected, with when it happened: the books explain every execution
 * that did not end in an accepted completion by one of these.
 */
export type Fault =
  /** The runtime was killed at `at` and answered again from `backAt`. */
  | { readonly kind: "runtime-kill"; readonly at: number; readonly backAt: number }
  /** A worker was stopped (SIGSTOP) at `at` and continued at `until`. */
  | { readonly kind: "worker-stop"; readonly worker: string; readonly at: number; readonly until: number }
  /** A worker process was killed at `at` (and another started under the same id later). */
  | { readonly kind: "worker-kill"; readonly worker: string; readonly at: number }
  /**
   * A DynamoDB or SQS request the runtime's fault injection failed (local/aws-faults.ts), from
   * `at` to `until`, with the runs and jobs the request was about (the runtime's fault log).
   */
  | AwsFault;

export type AwsFault = Extract<AwsFaultEvent, { kind: "aws-fault" }>;

/** The crash loop's two tenants (the dev credentials' tenant A and tenant B). */
export type ChaosTenant = "a" | "b";

/** The crash loop's workers: one bound to each tenant and a pool serving both. */
export const CHAOS_WORKERS = [
  { id: "chaos-a", accessKeyId: "AKIAJOBSCHEDWORKER01", tenants: ["a"] },
  { id: "chaos-b", accessKeyId: "AKIAJOBSCHEDWORKERB1", tenants: ["b"] },
  { id: "chaos-pool", accessKeyId: "AKIAJOBSCHEDPOOL0001", tenants: ["a", "b"] },
] as const satisfies ReadonlyArray<{ id: string; accessKeyId: string; tenants: readonly ChaosTenant[] }>;
