import type { SQSClient } from "@aws-sdk/client-sqs";
import { type LaneListenResponse, laneListenResponse } from "@jobsched/contract";
import { sleepUnless } from "./sleep.js";

/**
 * The idle worker's doorbell (decision 0049). A worker whose lease request came back empty
 * does not ask again every second or two, which held a Lambda for each wait and billed it: it
 * long-polls its own lanes in SQS (20 s a poll, free while nothing comes but the requests) with
 * the credentials `POST /internal/lanes` hands out, which may only receive from those lanes.
 * A poll that sees a message is a ring: the worker asks for a lease at once, naming the lane
 * that rang so the lease step polls it first. The peek takes at most one message and leaves it
 * visible (the visibility the API names, 0 s), so the lease step's own receive takes it; each
 * lane is peeked at most once a second, since every receive counts toward the lane's redrive
 * limit. Nothing here ever holds or deletes a message.
 *
 * The bell is a shortcut, never the only way in: it rings "quiet" after `maxWaitMs` so the
 * worker asks for a lease anyway, and any failure (a lane gone, credentials lapsed, the
 * emulator restarted, a deployment without the route) makes it "unavailable", so the worker
 * polls the lease route as it did before until the bell can be set up again.
 */
export type BellResult =
  | { readonly kind: "rung"; readonly lane: { readonly tenant: string; readonly type: string } }
  | { readonly kind: "quiet" }
  | { readonly kind: "unavailable" };
const QUIET: BellResult = { kind: "quiet" };
const UNAVAILABLE: BellResult = { kind: "unavailable" };

/** What a receive needs: the SDK's client, or a stand-in in tests. */
export type LaneClientFactory = (config: {
  readonly region: string;
  readonly endpoint?: string;
  readonly credentials: NonNullable<LaneListenResponse["listen"]>["credentials"];
}) => Pick<SQSClient, "send" | "destroy">;

export interface LaneBellOptions {
  readonly types: readonly string[];
  readonly workerId: string;
  /** POST /internal/lanes, signed; resolves with the HTTP status and body. */
  readonly askForLanes: (body: unknown) => Promise<{ status: number; body: unknown }>;
  readonly clientFor?: LaneClientFactory;
  readonly stopping: AbortSignal;
  readonly log: (line: string) => void;
  readonly now?: () => number;
  /** How long past its wait a round of polls may stay out before it counts as stuck (tests shorten it). */
  readonly roundGraceMs?: number;
}

/** A long poll's longest wait (SQS's limit). */
const POLL_SECONDS = 20;
/** Ask for lanes and credentials again this long before they lapse. */
const RENEW_BEFORE_MS = 5 * 60_000;
/** After the route said no, the worker polls the lease route this long before asking again. */
const RETRY_GRANT_MS = 10 * 60_000;
/**
 * After a receive or the route failed (a restart, lapsed credentials), this long, doubling with
 * each failure in a row up to RETRY_AFTER_FAILURE_CAP_MS (an SQS endpoint the worker cannot
 * reach must not cost it a stuck round every half minute); a round that answers resets it.
 */
const RETRY_AFTER_FAILURE_MS = 30_000;
const RETRY_AFTER_FAILURE_CAP_MS = 10 * 60_000;
/** A connection to SQS not made in this long fails at once (a firewall that drops packets). */
const CONNECTION_TIMEOUT_MS = 3_000;
/** A lane is peeked at most once this often: every receive counts toward its redrive limit. */
const PEEK_COOL_DOWN_MS = 1_000;
/** A round of polls that has not answered this long after its wait is stuck (a half-open connection). */
const ROUND_GRACE_MS = 10_000;

type Lane = { readonly tenant: string; readonly type: string; readonly queueUrl: string };
type Grant = {
  readonly lanes: readonly Lane[];
  readonly renewAt: number;
  readonly client: Pick<SQSClient, "send" | "destroy">;
};

export class LaneBell {
  private grant: Grant | undefined;
  private refusedUntil = 0;
  /** Failures in a row, for the back-off after each. */
  private failures = 0;
  private readonly gone = new Set<string>();
  private waiting: Promise<BellResult> | undefined;
  /** The API's peek visibility (seconds), from the last grant. */
  private peekVisibility = 0;
  /** When the bell last rang: the next round waits out the cool-down from it. */
  private rangAt = Number.NEGATIVE_INFINITY;
  private readonly now: () => number;

  constructor(private readonly options: LaneBellOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Waits until one of the worker's lanes holds a message ("rung"), `maxWaitMs` passes
   * ("quiet"), or the bell cannot listen ("unavailable": poll the lease route instead). Callers
   * waiting at the same time share one wait, so several pollers make one long poll a lane.
   */
  wait(maxWaitMs: number): Promise<BellResult> {
    this.waiting ??= this.listen(maxWaitMs).finally(() => {
      this.waiting = undefined;
    });
    return this.waiting;
  }

  /** Releases the SQS client. */
  close(): void {
    this.grant?.client.destroy();
    this.grant = undefined;
  }

  private async listen(maxWaitMs: number): Promise<BellResult> {
    const until = this.now() + maxWaitMs;
    // A message seen a moment ago may still be there (another listener's lease took it, or
    // is about to): not peeked again within the cool-down.
    const coolDown = this.rangAt + PEEK_COOL_DOWN_MS - this.now();
    if (coolDown > 0) await sleepUnless(coolDown, this.options.stopping);
    while (!this.options.stopping.aborted && this.now() < until) {
      const grant = await this.currentGrant();
      if (!grant) return UNAVAILABLE;
      if (this.options.stopping.aborted) break;
      const seconds = Math.max(1, Math.min(POLL_SECONDS, Math.ceil((until - this.now()) / 1000)));
      const outcome = await this.pollOnce(grant, seconds);
      if (outcome.kind !== "unavailable") this.failures = 0;
      if (outcome.kind === "rung") this.rangAt = this.now();
      if (outcome.kind !== "quiet") return outcome;
    }
    return QUIET;
  }

  /**
   * One long poll of every lane at once: rung as soon as one sees a message, unavailable as soon
   * as one fails (the rest are cut off either way), quiet when all come back empty. A round still
   * out ROUND_GRACE_MS past its wait is cut off as failed: a half-open connection must not keep
   * the worker from its fallback lease request.
   */
  private pollOnce(grant: Grant, seconds: number): Promise<BellResult> {
    const round = new AbortController();
    return new Promise<BellResult>((resolve) => {
      let pending = grant.lanes.length;
      const settle = (result: BellResult) => {
        if (round.signal.aborted) return;
        clearTimeout(stuck);
        this.options.stopping.removeEventListener("abort", stop);
        round.abort();
        resolve(result);
      };
      // A stopping worker does not wait out the long polls.
      const stop = () => settle(QUIET);
      this.options.stopping.addEventListener("abort", stop, { once: true });
      const stuck = setTimeout(
        () => {
          this.options.log("[worker] listening on lanes got no answer in time; polling instead");
          this.fail(false);
          settle(UNAVAILABLE);
        },
        seconds * 1000 + (this.options.roundGraceMs ?? ROUND_GRACE_MS),
      );
      for (const lane of grant.lanes) {
        this.receive(grant, lane.queueUrl, seconds, round.signal).then((seen) => {
          if (seen === "message")
            return settle({ kind: "rung", lane: { tenant: lane.tenant, type: lane.type } });
          if (seen === "failed") return settle(UNAVAILABLE);
          if (--pending === 0) settle(QUIET);
        });
      }
    });
  }

  /** A peek: at most one message, with the API's peek visibility (0 s: left visible). Never rejects. */
  private async receive(
    grant: Grant,
    queueUrl: string,
    seconds: number,
    signal: AbortSignal,
  ): Promise<"message" | "empty" | "failed"> {
    try {
      const { ReceiveMessageCommand } = await import("@aws-sdk/client-sqs");
      const output = await grant.client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 1,
          WaitTimeSeconds: seconds,
          VisibilityTimeout: this.peekVisibility,
        }),
        { abortSignal: signal },
      );
      return (output.Messages?.length ?? 0) > 0 ? "message" : "empty";
    } catch (error) {
      if (signal.aborted) return "empty";
      const name = (error as { name?: string }).name ?? "";
      // A deleted lane (the janitor's, or an emulator that restarted): ask for it afresh.
      if (/QueueDoesNotExist|NonExistentQueue/.test(name)) this.gone.add(queueUrl);
      this.options.log(
        `[worker] listening on ${queueUrl} failed (${name || String(error)}); polling instead`,
      );
      this.fail(this.gone.size > 0);
      return "failed";
    }
  }

  /** The lanes and credentials in hand, asked for again before they lapse; undefined: poll instead. */
  private async currentGrant(): Promise<Grant | undefined> {
    const now = this.now();
    if (this.grant && now < this.grant.renewAt && this.gone.size === 0) return this.grant;
    if (now < this.refusedUntil) return undefined;
    this.dropGrant();
    try {
      const response = await this.options.askForLanes({
        workerId: this.options.workerId,
        types: this.options.types,
        gone: [...this.gone],
      });
      const parsed = response.status === 200 ? laneListenResponse.safeParse(response.body) : undefined;
      const listen = parsed?.success ? parsed.data.listen : undefined;
      if (!parsed?.success || !listen || parsed.data.lanes.length === 0) {
        const why = parsed?.success ? (parsed.data.reason ?? "no lanes") : `answered ${response.status}`;
        this.options.log(`[worker] not listening on lanes (${why}); polling for leases`);
        // A refusal stands for a while; a failure (5xx, throttling) is tried again sooner.
        const failed = response.status >= 500 || response.status === 429;
        this.refusedUntil = now + (failed ? this.backOff() : RETRY_GRANT_MS);
        return undefined;
      }
      // Some lanes left out (their tenant's job-types quota): say so, and listen on the rest.
      if (parsed.data.reason) this.options.log(`[worker] ${parsed.data.reason}`);
      this.gone.clear();
      this.peekVisibility = listen.peekVisibilitySeconds;
      const factory = this.options.clientFor ?? (await sdkClientFactory());
      this.grant = {
        lanes: parsed.data.lanes,
        renewAt: Math.min(Date.parse(listen.expiresAt) - RENEW_BEFORE_MS, now + 55 * 60_000),
        client: factory({
          region: listen.region,
          credentials: listen.credentials,
          ...(listen.endpoint === undefined ? {} : { endpoint: listen.endpoint }),
        }),
      };
      return this.grant;
    } catch (error) {
      this.options.log(`[worker] asking for lanes failed (${String(error)}); polling for leases`);
      this.refusedUntil = now + this.backOff();
      return undefined;
    }
  }

  /**
   * Drops the grant after a failure. A gone lane is asked for again at once; anything else
   * (credentials, network) after a pause, the worker polling the lease route meanwhile.
   */
  private fail(laneGone: boolean): void {
    this.dropGrant();
    if (!laneGone) this.refusedUntil = this.now() + this.backOff();
  }

  /** The pause after one more failure in a row. */
  private backOff(): number {
    this.failures++;
    return Math.min(RETRY_AFTER_FAILURE_CAP_MS, RETRY_AFTER_FAILURE_MS * 2 ** (this.failures - 1));
  }

  private dropGrant(): void {
    this.grant?.client.destroy();
    this.grant = undefined;
  }
}

/** The AWS SDK's SQS client, loaded only by a worker that listens. */
async function sdkClientFactory(): Promise<LaneClientFactory> {
  const { SQSClient } = await import("@aws-sdk/client-sqs");
  return (config) =>
    new SQSClient({
      region: config.region,
      credentials: config.credentials,
      maxAttempts: 1,
      requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS },
      ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint, useQueueUrlAsEndpoint: false }),
    });
}
