import type { SQSClient } from "@aws-sdk/client-sqs";
import { type LaneListenResponse, laneListenResponse } from "@jobsched/contract";

/**
 * The idle worker's doorbell (decision 0049). A worker whose lease request came back empty
 * does not ask again every second or two, which held a Lambda for each wait and billed it: it
 * long-polls its own lanes in SQS (20 s a poll, free while nothing comes but the requests) with
 * the credentials `POST /internal/lanes` hands out, which may only receive from those lanes.
 * A poll that sees a message is a ring: the worker asks for a lease at once. The peek takes at
 * most one message and hides it for the visibility the API names (a second), so the lease
 * step's own receive takes it a moment later; nothing here ever holds or deletes a message.
 *
 * The bell is a shortcut, never the only way in: it rings "quiet" after `maxWaitMs` so the
 * worker asks for a lease anyway, and any failure (a lane gone, credentials lapsed, the
 * emulator restarted, a deployment without the route) makes it "unavailable", so the worker
 * polls the lease route as it did before until the bell can be set up again.
 */
export type BellResult = "rung" | "quiet" | "unavailable";

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
}

/** A long poll's longest wait (SQS's limit). */
const POLL_SECONDS = 20;
/** Ask for lanes and credentials again this long before they lapse. */
const RENEW_BEFORE_MS = 5 * 60_000;
/** After the route said no, the worker polls the lease route this long before asking again. */
const RETRY_GRANT_MS = 10 * 60_000;
/** After a receive or the route failed (a restart, lapsed credentials), this long. */
const RETRY_AFTER_FAILURE_MS = 30_000;

type Grant = {
  readonly lanes: readonly string[];
  readonly renewAt: number;
  readonly client: Pick<SQSClient, "send" | "destroy">;
};

export class LaneBell {
  private grant: Grant | undefined;
  private refusedUntil = 0;
  private readonly gone = new Set<string>();
  private waiting: Promise<BellResult> | undefined;
  /** The API's peek visibility (seconds), from the last grant. */
  private peekVisibility = 1;
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
    while (!this.options.stopping.aborted && this.now() < until) {
      const grant = await this.currentGrant();
      if (!grant) return "unavailable";
      const seconds = Math.max(1, Math.min(POLL_SECONDS, Math.ceil((until - this.now()) / 1000)));
      const outcome = await this.pollOnce(grant, seconds);
      if (outcome !== "quiet") return outcome;
    }
    return "quiet";
  }

  /** One long poll of every lane at once: rung as soon as one sees a message (the rest are cut off). */
  private pollOnce(grant: Grant, seconds: number): Promise<BellResult> {
    const round = new AbortController();
    return new Promise<BellResult>((resolve) => {
      let pending = grant.lanes.length;
      let failed = false;
      const settle = (result: BellResult) => {
        if (round.signal.aborted) return;
        this.options.stopping.removeEventListener("abort", stop);
        round.abort();
        resolve(result);
      };
      // A stopping worker does not wait out the long polls.
      const stop = () => settle("quiet");
      this.options.stopping.addEventListener("abort", stop, { once: true });
      for (const queueUrl of grant.lanes) {
        this.receive(grant, queueUrl, seconds, round.signal).then((seen) => {
          if (seen === "message") return settle("rung");
          if (seen === "failed") failed = true;
          if (--pending === 0) settle(failed ? "unavailable" : "quiet");
        });
      }
    });
  }

  /** A peek: at most one message, hidden for the API's peek visibility. Never rejects. */
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
      this.dropGrant();
      // A gone lane is asked for again at once; anything else (credentials, network) after a
      // pause, polling the lease route meanwhile.
      if (this.gone.size === 0) this.refusedUntil = this.now() + RETRY_AFTER_FAILURE_MS;
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
        this.refusedUntil = now + RETRY_GRANT_MS;
        return undefined;
      }
      this.gone.clear();
      this.peekVisibility = listen.peekVisibilitySeconds;
      const factory = this.options.clientFor ?? (await sdkClientFactory());
      this.grant = {
        lanes: parsed.data.lanes.map((lane) => lane.queueUrl),
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
      this.refusedUntil = now + RETRY_AFTER_FAILURE_MS;
      return undefined;
    }
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
      ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint, useQueueUrlAsEndpoint: false }),
    });
}
