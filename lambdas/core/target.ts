import {
  AWS_TARGET_TIMEOUT_SECONDS,
  DEFAULT_TARGET_CONCURRENCY,
  type LambdaInvocation,
} from "@jobsched/contract";

// The target limits live in the contract, which the clients share; named here for the core.
export {
  AWS_TARGET_TIMEOUT_SECONDS,
  DEFAULT_TARGET_CONCURRENCY,
  DEFAULT_TARGET_TIMEOUT_SECONDS,
  MAX_TARGET_TIMEOUT_SECONDS,
  PUSH_TYPES,
} from "@jobsched/contract";

/**
 * Push delivery (decision 0029): a job may name a target that the dispatcher calls itself,
 * instead of leaving its runs to pull workers. The target's kind is the job's type, spelled
 * with a leading `@` that worker types cannot have: its runs travel in the push queue, which
 * only the dispatcher reads, and no worker can ask for them.
 */
export type Target =
  | {
      readonly kind: "lambda";
      /** A function ARN, or a version's or alias's. */
      readonly functionArn: string;
      /** A role in the tenant's account the dispatcher assumes, with the tenant as external id. */
      readonly roleArn: string;
      /**
       * `sync`: wait for the function's answer (at most AWS_TARGET_TIMEOUT_SECONDS); `async`:
       * Lambda's asynchronous invocation, accepted is delivered (decision 0033).
       */
      readonly invocation: LambdaInvocation;
    }
  | { readonly kind: "sqs"; readonly queueUrl: string; readonly roleArn: string }
  | {
      readonly kind: "https";
      readonly url: string;
      /** How long the endpoint has to answer; the run's attempt fails (retryably) after it. */
      readonly timeoutSeconds: number;
      /** Deliveries to this endpoint one dispatcher has in flight at once. */
      readonly concurrency: number;
    };

export type TargetKind = Target["kind"];

const PUSH_TYPE_PREFIX = "@";

/** The type of a job with this target: `@https`, `@lambda` or `@sqs`. */
export function pushTypeOf(target: Pick<Target, "kind">): string {
  return `${PUSH_TYPE_PREFIX}${target.kind}`;
}

/** Whether runs of this type are pushed by the dispatcher (not leased by workers). */
export function isPushType(type: string): boolean {
  return type.startsWith(PUSH_TYPE_PREFIX);
}

/** What a target receives for each attempt of a run: the body of the POST, the invoke, the message. */
export interface RunEnvelope {
  /** `jobId@scheduledFor`: the same for every attempt; an idempotency key for the target's effects. */
  readonly runKey: string;
  readonly runId: string;
  readonly jobId: string;
  /** Goes up with every attempt; an effect made with a lower one is stale. */
  readonly fence: number;
  readonly scheduledFor: string;
  readonly attempt: number;
  readonly payload: unknown;
}

/** What an attempt to deliver came to. */
export type DeliveryResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /** False: fail for good (dead-lettered at once), as a 4xx other than 408, 425 and 429. */
      readonly retryable: boolean;
      readonly error: string;
      /** The target asked not to be called again before this many seconds (Retry-After). */
      readonly retryAfterSeconds?: number | undefined;
    };

/** Delivers a run to its target: an adapter per kind (HTTPS, Lambda, SQS). */
export interface TargetInvoker {
  deliver(
    target: Target,
    envelope: RunEnvelope,
    context: { readonly tenant: string; readonly timeoutMs: number },
  ): Promise<DeliveryResult>;
}

/** Deliveries in flight per target key (the per-target concurrency limit). */
export interface TargetSlots {
  inFlight(key: string): number;
  /** Deliveries waiting for a slot of this key. */
  queuedFor(key: string): number;
  /** Takes a slot, waiting up to `waitMs` for one to free; false when none did. */
  acquire(key: string, limit: number, waitMs: number): Promise<boolean>;
  release(key: string): void;
  /**
   * Resolves once no delivery waits for a slot, or after `maxWaitMs`: the dispatcher records
   * outcomes after the deliveries queued beside them, so that at a spike the writes of the
   * first runs do not hold up the delivery of the last. A delivery in flight (a slow target)
   * is not waited for.
   */
  quiet(maxWaitMs: number): Promise<void>;
}

/** The same endpoint: what a per-target concurrency limit counts. */
export function targetKeyOf(tenant: string, target: Target): string {
  switch (target.kind) {
    case "https":
      return `${tenant} https ${new URL(target.url).origin}`;
    case "lambda":
      return `${tenant} lambda ${target.functionArn}`;
    case "sqs":
      return `${tenant} sqs ${target.queueUrl}`;
  }
}

export function timeoutMsOf(target: Target): number {
  return (target.kind === "https" ? target.timeoutSeconds : AWS_TARGET_TIMEOUT_SECONDS) * 1000;
}

export function concurrencyOf(target: Target): number {
  return target.kind === "https" ? target.concurrency : DEFAULT_TARGET_CONCURRENCY;
}
