import { hostname } from "node:os";
import { createSignedFetch, type JsonResponse } from "@jobsched/client";
import {
  type CompletionsResponse,
  completionsResponse,
  type HeartbeatsResponse,
  heartbeatsResponse,
  type Lease,
  leasesResponse,
  retryDelayMs,
} from "@jobsched/contract";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import { createBatcher } from "./batcher.js";
import { LaneBell, type LaneClientFactory } from "./lane-bell.js";
import { AHEAD_MS, leaseRoom, MAX_PER_LEASE } from "./lease-room.js";
import { type HoldClock, RunHold, systemHoldClock } from "./run-hold.js";
import { sleep, sleepUnless } from "./sleep.js";

/**
 * The jobsched worker SDK. `createWorker` leases runs of the given types, holds each until its
 * `startAt` (leases are handed over up to ~26 s ahead), runs the handler for each (at most
 * `concurrency` at once), heartbeats while the handler runs, and completes the run with its
 * fence; heartbeats and completions of many runs share requests. Throw `PermanentError` for failures that must not be retried; any other
 * error is retried after the job's backoff. Pass `runKey` downstream as an idempotency key:
 * execution is at least once, and the run key is the same on every attempt.
 */
/** A leased run, as `POST /internal/leases` returns it. */
export type LeasedRun = Lease;

export interface RunContext {
  /** Aborted when the lease is lost (a heartbeat got 409): stop, your result will be refused. */
  readonly signal: AbortSignal;
}

/** A failure that retrying cannot fix: the run is dead-lettered at once. */
export class PermanentError extends Error {
  override readonly name = "PermanentError";
}

export interface WorkerOptions {
  readonly endpoint: string;
  readonly types: readonly string[];
  readonly handler: (run: LeasedRun, context: RunContext) => Promise<void>;
  /** Runs executed at once (default 10). */
  readonly concurrency?: number;
  /**
   * Runs held besides those executing: leased ahead of their time and waiting for it, or due
   * and waiting for a slot (default: as many as `concurrency`, at least 50). A spike's runs are
   * handed over in the seconds before it; a worker that can hold more takes more of them early.
   * Runs more than 5 s ahead, counted with what lease requests still out ask for, take at most
   * half of `concurrency + prefetch` (and at most `prefetch`): the rest is kept for runs due
   * sooner (lease-room.ts). A worker holding its limit ahead asks for nothing until those runs
   * come within 5 s, even with free slots. With a `prefetch` below `concurrency` the limit
   * binds only once a run is held ahead, so due runs still fill the free slots a request at a
   * time; 0 means no runs held ahead beyond the slots.
   */
  readonly prefetch?: number;
  readonly region?: string;
  /** Default: the standard AWS credential chain (environment, profile, instance role...). */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  readonly workerId?: string;
  /** Heartbeat every this fraction of the lease (default 1/3). */
  readonly heartbeatFraction?: number;
  /** Drain and stop on SIGTERM/SIGINT (default true). */
  readonly stopOnSignals?: boolean;
  readonly log?: (line: string) => void;
  /** Told how each run ended on this worker: for metrics, audits and the crash-loop test. */
  readonly onCompleted?: (run: LeasedRun, report: CompletionReport) => void;
  /** Backoff between retries of the worker's own HTTP calls (default 200 ms doubling to 5 s). */
  readonly callBackoff?: { readonly baseMs: number; readonly capMs: number };
  /** The clock the hold runs on (tests pass a fake one). */
  readonly clock?: HoldClock;
  /**
   * While idle, wait on the worker's lanes in SQS (POST /internal/lanes hands out credentials
   * that reach only them) instead of asking for leases every second or two (default true;
   * decision 0049). Falls back to asking when the deployment cannot hand them out.
   */
  readonly listen?: boolean;
  /** The SQS client the lanes are long-polled with (default: the AWS SDK's); for metering and tests. */
  readonly laneClient?: LaneClientFactory;
}

export interface CompletionReport {
  readonly result: "succeeded" | "failed" | "not-started";
  readonly status: number | "lease-lost" | "unreachable" | "given-up";
  /** When the completion was first sent (epoch ms). */
  readonly sentAt: number;
}

export interface Worker {
  /** Resolves once the worker has stopped and every run in hand has been completed. */
  readonly done: Promise<void>;
  /** Stops leasing, lets the runs in hand finish and complete them, then resolves `done`. */
  stop(): Promise<void>;
  /** The same as stop(): drains, then resolves once every run in hand is completed. */
  close(): Promise<void>;
  /** Runs in hand right now. */
  inFlight(): number;
}

/**
 * A poller that got fewer runs than it asked for pauses before asking again: runs become
 * visible at least 5 s before they are due (DELIVERY_LEAD_SECONDS) and are handed over at once,
 * so a poll a second (two when idle) still leases them seconds early, and a steady trickle is
 * leased a second's worth per request rather than one run per request. A job created to run at
 * once may start up to about 2 s later. An empty answer doubles the pause, 250 ms up to 2 s.
 */
const POLL_PAUSE_MS = 1_000;
const IDLE_PAUSE = { baseMs: 250, capMs: 2_000 };
/**
 * A listening worker asks for leases at least this often even when its lanes stay quiet: the
 * bell is a shortcut, and this bounds what a missed ring could cost.
 */
const LISTEN_LEASE_EVERY_MS = 5 * 60_000;
/** The worker's own HTTP calls back off from 200 ms up to 5 s. */
const CALL_BACKOFF = { baseMs: 200, capMs: 5_000 };
/** Lease requests and heartbeats give up after this many tries (the next ones come anyway). */
const CALL_ATTEMPTS = 8;
/**
 * A completion is retried for up to five minutes: the outcome is the one thing the worker
 * cannot ask for again. Given up, the run lapses and runs again, and if the scheduler had
 * recorded it just before a crash cut off its answer, only a repeat finishes what the crash cut
 * short (the job's end). Eight tries (about 20 s) did not outlast two restarts in a row.
 */
const COMPLETION_PATIENCE_MS = 300_000;
/**
 * Completions and heartbeats wait up to a second for others to share a request with
 * (POST /internal/completions, /internal/heartbeats: up to 100 items each; decision 0050), but
 * never past LEASE_MARGIN_MS before their lease's end.
 */
const BATCH_WINDOW_MS = 1_000;
const BATCH_MAX_ITEMS = 100;
/** A completion or heartbeat is on its way at least this long before the lease it needs ends. */
const LEASE_MARGIN_MS = 2_000;

/** One item of a batched call's answer, as the contract defines it. */
type ItemResult = CompletionsResponse["results"][number] | HeartbeatsResponse["results"][number];
/** An item's answer and when the request that carried it was sent (epoch ms). */
type SentResult = { readonly result: ItemResult; readonly sentAt: number };

/** The items of a batched call's answer, checked against the contract; one per item sent. */
function itemResultsOf(
  schema: typeof completionsResponse | typeof heartbeatsResponse,
  body: unknown,
  count: number,
): ItemResult[] | undefined {
  const parsed = schema.safeParse(body);
  return parsed.success && parsed.data.results.length === count ? parsed.data.results : undefined;
}

export function createWorker(options: WorkerOptions): Worker {
  const concurrency = options.concurrency ?? 10;
  const prefetch = options.prefetch ?? Math.max(concurrency, 50);
  const capacity = concurrency + prefetch;
  const log = options.log ?? ((line: string) => console.log(line));
  const workerId = options.workerId ?? `${hostname()}-${process.pid}`;
  const clock = options.clock ?? systemHoldClock;
  const call = createSignedFetch({
    endpoint: options.endpoint,
    region: options.region ?? process.env.AWS_REGION ?? "us-east-1",
    credentials: options.credentials ?? defaultCredentials(),
  });
  const stopping = new AbortController();
  // Lease requests hand runs over as soon as they are granted, so one request at a time keeps
  // up unless the worker can hold more than one request brings.
  const pollerCount = Math.max(1, Math.ceil(capacity / (2 * MAX_PER_LEASE)));
  /** Slots asked for by lease requests still out. */
  let asking = 0;

  /**
   * An HTTP call retried with backoff on network errors, throttling and 5xx (4xx are answers),
   * CALL_ATTEMPTS times, or for `patienceMs` when given.
   */
  async function post(path: string, body: unknown, patienceMs?: number): Promise<JsonResponse> {
    const started = Date.now();
    const givesUp = (attempt: number) =>
      patienceMs === undefined ? attempt >= CALL_ATTEMPTS : Date.now() - started >= patienceMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await call("POST", path, { body });
        if (response.status < 500 && response.status !== 429) return response;
        if (givesUp(attempt)) return response;
      } catch (error) {
        if (givesUp(attempt)) throw error;
      }
      await sleep(retryDelayMs(attempt, options.callBackoff ?? CALL_BACKOFF, Math.random));
    }
  }

  /** A batched call: each item's own status (the call's status for all, if it failed as a whole). */
  function batchedCall(
    path: string,
    key: string,
    schema: typeof completionsResponse | typeof heartbeatsResponse,
    patienceMs?: number,
  ) {
    return createBatcher<Record<string, unknown>, SentResult>({
      windowMs: BATCH_WINDOW_MS,
      maxItems: BATCH_MAX_ITEMS,
      send: async (items) => {
        const sentAt = Date.now();
        const response = await post(path, { [key]: items }, patienceMs);
        const results =
          response.status === 200 ? itemResultsOf(schema, response.body, items.length) : undefined;
        if (results) return results.map((result) => ({ result, sentAt }));
        return items.map((item) => ({
          sentAt,
          result: {
            runId: String(item.runId),
            status: response.status === 200 ? 502 : response.status,
            error: { code: "BadBatchAnswer", message: JSON.stringify(response.body).slice(0, 500) },
          },
        }));
      },
    });
  }
  const heartbeat = batchedCall("/internal/heartbeats", "heartbeats", heartbeatsResponse);
  const sendCompletion = batchedCall(
    "/internal/completions",
    "completions",
    completionsResponse,
    COMPLETION_PATIENCE_MS,
  );
  // A stopping worker's outcomes waiting for company go at once.
  stopping.signal.addEventListener("abort", () => sendCompletion.flush(), { once: true });

  /** A completion, its item retried on a 5xx answer for up to COMPLETION_PATIENCE_MS. */
  async function complete(item: Record<string, unknown>, leaseEndsAt: number): Promise<SentResult> {
    const started = Date.now();
    let firstSentAt: number | undefined;
    for (let attempt = 1; ; attempt++) {
      // A stopping worker sends its outcomes at once rather than at the window's end.
      const latestAt = stopping.signal.aborted ? Date.now() : leaseEndsAt - LEASE_MARGIN_MS;
      const { result, sentAt } = await sendCompletion(item, latestAt);
      firstSentAt ??= sentAt;
      if (result.status < 500 || Date.now() - started >= COMPLETION_PATIENCE_MS) {
        return { result, sentAt: firstSentAt };
      }
      await sleep(retryDelayMs(attempt, options.callBackoff ?? CALL_BACKOFF, Math.random));
    }
  }

  async function execute(run: LeasedRun): Promise<void> {
    const lost = new AbortController();
    const leaseMs = Date.parse(run.leaseExpiresAt) - Date.parse(run.startAt);
    const every = Math.max(1_000, leaseMs * (options.heartbeatFraction ?? 1 / 3));
    /**
     * The lease's end, on this worker's clock: batched calls go before it. A heartbeat the
     * scheduler took extends the lease to at least the lease's length after the heartbeat was
     * queued here, whatever the two clocks say, so that is what it moves to.
     */
    let leaseEndsAt = Date.parse(run.leaseExpiresAt);
    const beat = setInterval(() => {
      const queuedAt = Date.now();
      heartbeat({ runId: run.runId, fence: run.fence }, leaseEndsAt - LEASE_MARGIN_MS)
        .then(({ result }) => {
          if (result.status === 409 || result.status === 404) lost.abort(new Error("lease lost"));
          if (result.status === 200) leaseEndsAt = Math.max(leaseEndsAt, queuedAt + leaseMs);
        })
        .catch((error: unknown) => log(`[worker] heartbeat for ${run.runKey} failed: ${String(error)}`));
    }, every);
    let outcome: { result: "succeeded" | "failed"; retryable?: boolean; error?: string };
    try {
      await options.handler(run, { signal: lost.signal });
      outcome = { result: "succeeded" };
    } catch (error) {
      outcome = {
        result: "failed",
        retryable: !(error instanceof PermanentError),
        error: error instanceof Error ? error.message : String(error),
      };
    } finally {
      clearInterval(beat);
    }
    let sentAt = Date.now();
    const report = (status: CompletionReport["status"]) =>
      options.onCompleted?.(run, { result: outcome.result, status, sentAt });
    if (lost.signal.aborted) {
      log(`[worker] lease on ${run.runKey} was lost; not completing it`);
      report("lease-lost");
      return;
    }
    let result: ItemResult;
    try {
      const sent = await complete(
        { runId: run.runId, fence: run.fence, final: run.final, ...outcome },
        leaseEndsAt,
      );
      result = sent.result;
      sentAt = sent.sentAt;
    } catch (error) {
      report("unreachable");
      throw error;
    }
    report(result.status);
    if (result.status !== 200) {
      log(`[worker] completing ${run.runKey} answered ${result.status}: ${JSON.stringify(result.error)}`);
    }
  }

  const hold = new RunHold<LeasedRun>({
    concurrency,
    clock,
    start: (run) => execute(run).catch((error: unknown) => log(`[worker] ${run.runKey}: ${String(error)}`)),
    giveUp: (run) => {
      log(`[worker] ${run.runKey}: its lease ran out before a slot was free; not starting it`);
      options.onCompleted?.(run, { result: "not-started", status: "given-up", sentAt: Date.now() });
    },
  });

  const bell =
    (options.listen ?? true)
      ? new LaneBell({
          types: options.types,
          workerId,
          askForLanes: (body) => post("/internal/lanes", body),
          ...(options.laneClient ? { clientFor: options.laneClient } : {}),
          stopping: stopping.signal,
          log,
        })
      : undefined;

  async function poller(): Promise<void> {
    let idleMs = 0;
    /** The lane the bell last rang on, for the next lease request. */
    let rang: { tenant: string; type: string } | undefined;
    while (!stopping.signal.aborted) {
      const max = leaseRoom({
        concurrency,
        prefetch,
        inHand: hold.inHand(),
        heldAhead: hold.heldStartingAfter(clock.now() + AHEAD_MS),
        asking,
      });
      if (max <= 0) {
        await sleepUnless(50, stopping.signal);
        continue;
      }
      asking += max; // the room is spoken for while the request is out
      let leases: LeasedRun[] = [];
      let pauseMs = 0;
      /** The request was answered, with nothing to do. */
      let empty = false;
      const prefer = rang;
      rang = undefined;
      try {
        const response = await post("/internal/leases", {
          workerId,
          types: options.types,
          max,
          waitSeconds: 1,
          // The lane the bell rang on, polled first (decision 0049).
          ...(prefer ? { prefer } : {}),
        });
        // Checked against the API's own schema: a body that is not leases is never run.
        const parsed = response.status === 200 ? leasesResponse.safeParse(response.body) : undefined;
        if (parsed?.success) {
          leases = parsed.data;
          // Nothing to do: pause before asking again, longer each time (every request is billed).
          idleMs =
            leases.length > 0 ? 0 : Math.min(IDLE_PAUSE.capMs, Math.max(IDLE_PAUSE.baseMs, idleMs * 2));
          pauseMs = leases.length === max ? 0 : leases.length > 0 ? POLL_PAUSE_MS : idleMs;
          empty = leases.length === 0;
        } else {
          const why = parsed?.error ? `leases not as the API defines them (${parsed.error.message})` : "";
          log(`[worker] lease request answered ${response.status}: ${why || JSON.stringify(response.body)}`);
          pauseMs = 1_000;
        }
      } catch (error) {
        log(`[worker] lease request failed: ${String(error)}`);
        pauseMs = 1_000;
      } finally {
        asking -= max;
      }
      for (const run of leases) hold.add(run);
      // Idle: wait on the lanes (free while nothing comes) rather than ask again and again.
      if (empty && bell) {
        const heard = await bell.wait(LISTEN_LEASE_EVERY_MS);
        if (heard.kind === "rung") rang = heard.lane;
        if (heard.kind !== "unavailable") continue;
      }
      if (pauseMs > 0) await sleepUnless(pauseMs, stopping.signal);
    }
  }

  const pollers = Array.from({ length: pollerCount }, poller);
  const done = Promise.all(pollers)
    .then(() => hold.idle())
    .finally(() => bell?.close());

  const onSignal = () => {
    log("[worker] stopping: finishing the runs in hand");
    stopping.abort();
  };
  if (options.stopOnSignals ?? true) {
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  }
  return {
    done: done.finally(() => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
    }),
    async stop() {
      stopping.abort();
      await this.done;
    },
    close() {
      return this.stop();
    },
    inFlight: () => hold.inHand(),
  };
}

function defaultCredentials(): AwsCredentialIdentityProvider {
  // Loaded lazily so that callers passing credentials do not need the provider chain.
  return async () => {
    const { fromNodeProviderChain } = await import("@aws-sdk/credential-providers");
    return fromNodeProviderChain()();
  };
}
