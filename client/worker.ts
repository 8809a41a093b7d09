import { hostname } from "node:os";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import { retryDelayMs } from "../lambdas/core/backoff";
import type { Lease } from "../lambdas/core/use-cases/lease-runs";
import { createSignedFetch, type JsonResponse } from "./signed-fetch";

/**
 * The jobsched worker SDK. `createWorker` leases runs of the given types, runs the handler for
 * each (at most `concurrency` at once), heartbeats while the handler runs, and completes the
 * run with its fence. Throw `PermanentError` for failures that must not be retried; any other
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
}

/**
 * What became of a run this worker executed. `status` is the HTTP status of the completion
 * (200 accepted, 409 refused: the fence was stale or the lease lapsed), "lease-lost" when a
 * heartbeat learned of it first (no completion sent), "unreachable" when every retry failed.
 */
export interface CompletionReport {
  readonly result: "succeeded" | "failed";
  readonly status: number | "lease-lost" | "unreachable";
  /** When the completion was first sent (epoch ms). */
  readonly sentAt: number;
}

export interface Worker {
  /** Resolves once the worker has stopped and every run in hand has been completed. */
  readonly done: Promise<void>;
  /** Stops leasing, lets the runs in hand finish and complete them, then resolves `done`. */
  stop(): Promise<void>;
  /** Runs in hand right now. */
  inFlight(): number;
}

/** The most runs one lease request asks for; more free slots mean more requests in flight. */
const MAX_PER_LEASE = 50;
/**
 * An idle worker pauses between empty lease requests, from 250 ms up to 2 s. Runs become
 * visible 5 s before they are due (DELIVERY_LEAD_SECONDS) and a lease request holds them until
 * then, so even at the longest pause a run due later than that starts on time; a job created to
 * run at once may start up to 2 s later. Halves an idle worker's requests and Lambda time.
 */
const IDLE_PAUSE = { baseMs: 250, capMs: 2_000 };
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

export function createWorker(options: WorkerOptions): Worker {
  const concurrency = options.concurrency ?? 10;
  const log = options.log ?? ((line: string) => console.log(line));
  const workerId = options.workerId ?? `${hostname()}-${process.pid}`;
  const call = createSignedFetch({
    endpoint: options.endpoint,
    region: options.region ?? process.env.AWS_REGION ?? "us-east-1",
    credentials: options.credentials ?? defaultCredentials(),
  });
  const stopping = new AbortController();
  let running = 0;
  // At least two lease requests in flight: a request holds its runs until they are due (up to
  // 6 s), and a run that shows up meanwhile, due sooner, needs another request listening (the
  // soak found runs 2-4 s late behind a single held request). Each asks for its share of slots.
  const pollerCount = Math.max(2, Math.ceil(concurrency / MAX_PER_LEASE));
  const share = Math.max(1, Math.ceil(concurrency / pollerCount));
  const executing = new Set<Promise<void>>();

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

  async function execute(run: LeasedRun): Promise<void> {
    const lost = new AbortController();
    const leaseMs = Date.parse(run.leaseExpiresAt) - Date.now();
    const every = Math.max(1_000, leaseMs * (options.heartbeatFraction ?? 1 / 3));
    const beat = setInterval(() => {
      post(`/internal/leases/${run.runId}/heartbeat`, { fence: run.fence })
        .then((response) => {
          if (response.status === 409 || response.status === 404) lost.abort(new Error("lease lost"));
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
    const sentAt = Date.now();
    const report = (status: CompletionReport["status"]) =>
      options.onCompleted?.(run, { result: outcome.result, status, sentAt });
    if (lost.signal.aborted) {
      log(`[worker] lease on ${run.runKey} was lost; not completing it`);
      report("lease-lost");
      return;
    }
    let response: JsonResponse;
    try {
      response = await post(
        `/internal/leases/${run.runId}/complete`,
        { fence: run.fence, ...outcome },
        COMPLETION_PATIENCE_MS,
      );
    } catch (error) {
      report("unreachable");
      throw error;
    }
    report(response.status);
    if (response.status !== 200) {
      log(`[worker] completing ${run.runKey} answered ${response.status}: ${JSON.stringify(response.body)}`);
    }
  }

  async function poller(): Promise<void> {
    let idleMs = 0;
    while (!stopping.signal.aborted) {
      const free = concurrency - running;
      if (free <= 0) {
        await Promise.race([...executing, sleep(1_000)]);
        continue;
      }
      const max = Math.min(free, share, MAX_PER_LEASE);
      running += max; // reserve the slots while the request is out
      let leases: LeasedRun[] = [];
      let pauseMs = 0;
      try {
        const response = await post("/internal/leases", {
          workerId,
          types: options.types,
          max,
          waitSeconds: 1,
        });
        if (response.status === 200) {
          leases = response.body as LeasedRun[];
          // Nothing to do: pause before asking again, longer each time (every request is billed).
          idleMs =
            leases.length > 0 ? 0 : Math.min(IDLE_PAUSE.capMs, Math.max(IDLE_PAUSE.baseMs, idleMs * 2));
          pauseMs = idleMs;
        } else {
          log(`[worker] lease request answered ${response.status}: ${JSON.stringify(response.body)}`);
          await sleep(1_000);
        }
      } catch (error) {
        log(`[worker] lease request failed: ${String(error)}`);
        await sleep(1_000);
      } finally {
        running -= max - leases.length;
      }
      if (pauseMs > 0) await sleepUnless(pauseMs, stopping.signal);
      for (const run of leases) {
        const task = execute(run)
          .catch((error: unknown) => log(`[worker] ${run.runKey}: ${String(error)}`))
          .finally(() => {
            running -= 1;
            executing.delete(task);
          });
        executing.add(task);
      }
    }
  }

  // Several lease requests in flight when there are many free slots (each is held until its
  // runs are due, so one request at a time would leave slots idle in a spike).
  const pollers = Array.from({ length: pollerCount }, poller);
  const done = Promise.all(pollers).then(async () => {
    while (executing.size > 0) await Promise.all([...executing]);
  });

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
    inFlight: () => executing.size,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** Sleeps, but wakes at once when `signal` aborts (a stopping worker does not wait out a pause). */
function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      done();
    }
    signal.addEventListener("abort", finish, { once: true });
  });
}

function defaultCredentials(): AwsCredentialIdentityProvider {
  // Loaded lazily so that callers passing credentials do not need the provider chain.
  return async () => {
    const { fromNodeProviderChain } = await import("@aws-sdk/credential-providers");
    return fromNodeProviderChain()();
  };
}
