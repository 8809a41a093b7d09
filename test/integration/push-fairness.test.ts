import { ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { beforeAll, describe, expect, it } from "vitest";
import { InProcessTenantShares, type ShareLimits } from "../../lambdas/adapters/targets/tenant-shares";
import type { Caller } from "../../lambdas/core/caller";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { FUNCTION_TIMEOUT_SECONDS } from "../../lambdas/definitions/functions";
import { createDispatchDeps, createDispatchHandler } from "../../lambdas/handlers/dispatch";
import { LocalFunctions, localReach } from "../../local/local-functions";
import { startSqsEventSource } from "../../local/sqs-event-source";
import { createTestStack, type TestStack } from "../support/stack";
import { startWebhookReceiver } from "../support/webhook-receiver";
import { storeWebhookSecret } from "../support/webhook-secret";

/**
 * Push fairness (issue 27, finding 7; decision 0039) on dynalite and fauxqs: the push queue's
 * messages carry their tenant as MessageGroupId, which makes it an SQS fair queue, and fauxqs
 * (patched, patches/fauxqs+1.9.2.patch) hands out a quiet tenant's messages before a noisy
 * one's as AWS documents. Nothing here is timed: the tests count what came before what.
 */
const A: Caller = { tenant: "tenant-a", principal: "arn:aws:iam::000000000000:user/a" };
const B: Caller = { tenant: "tenant-b", principal: "arn:aws:iam::000000000000:user/b" };
const SECRET = `whsec_${Buffer.from("push-fairness-secret-of-32-bytes").toString("base64")}`;

async function until<T>(
  what: () => T | undefined | Promise<T | undefined>,
  waitingFor = "",
  timeoutMs = 30_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting ${waitingFor}`.trim());
    await new Promise((done) => setTimeout(done, 20));
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

describe("the push queue as a fair queue", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack("push-fair-queue");
  }, 60_000);

  it("hands out a quiet tenant's run before a noisy tenant's backlog", async () => {
    const { pushQueueUrl } = stack.config;
    const run = (i: number, tenant: string) => ({
      message: { runId: `r-${tenant}-${i}`, jobId: `j-${tenant}`, scheduledFor: 0, tenant, type: "@https" },
      delaySeconds: 0,
    });
    const bodyTenant = (body: string | undefined) => (JSON.parse(body ?? "{}") as { tenant?: string }).tenant;
    const receive = async () => {
      const { Messages = [] } = await stack.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: pushQueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
      );
      return Messages.map((m) => bodyTenant(m.Body));
    };
    // Tenant A: a backlog of 100, of which 40 are taken and kept in flight (slow deliveries).
    await stack.deps.queue.send(Array.from({ length: 100 }, (_, i) => run(i, A.tenant)));
    const inFlight: Array<string | undefined> = [];
    for (let i = 0; i < 4; i++) inFlight.push(...(await receive()));
    expect(inFlight).toEqual(Array(40).fill(A.tenant));
    // Tenant B's one run, sent after A's backlog, is the next one handed out.
    await stack.deps.queue.send([run(0, B.tenant)]);
    const next = await receive();
    expect(next[0]).toBe(B.tenant);
    expect(next.slice(1)).toEqual(Array(next.length - 1).fill(A.tenant));
  });

  it("holds a MessageGroupId to SQS's rule locally: 1-128 letters, digits or punctuation", async () => {
    const send = (group: string) =>
      stack.sqs.send(
        new SendMessageCommand({
          QueueUrl: stack.config.pushQueueUrl,
          MessageBody: "{}",
          MessageGroupId: group,
        }),
      );
    await expect(send("x".repeat(129))).rejects.toThrow(/MessageGroupId/);
    await expect(send("a b")).rejects.toThrow(/MessageGroupId/);
    await expect(send("arn:aws:iam::000000000000:role/ok_+=,.@-")).resolves.toBeDefined();
  });
});

/**
 * Tenant A's runs, all due in the same second at an endpoint that answers only when the test
 * lets it (a slow endpoint, without timing), dispatched by a local event source of
 * `invocations` batches of 10 (one poller, so exactly that many), one tenant holding at most
 * `shares` of them. Once A's deliveries fill what A may hold, tenant B's run becomes due; then, if `rounds`, A's endpoint answers a round of deliveries at a time until
 * B's arrives (otherwise it answers none until then). Says how many rounds B waited and how
 * many of A's runs arrived before it.
 */
async function noisyNeighbour(
  name: string,
  options: {
    aRuns: number;
    invocations: number;
    /** What one tenant may hold: runs, and invocations holding them. */
    shares: ShareLimits;
    rounds: boolean;
  },
): Promise<{ rounds: number; aBeforeB: number }> {
  const stack = await createTestStack(name, { settings: { tenantCreatesPerSecond: 0 } });
  for (const { tenant } of [A, B]) {
    await storeWebhookSecret(stack.deps.webhookSecrets, tenant, SECRET);
  }
  const held: Array<() => void> = [];
  let holding = true;
  let aArrived = 0;
  let bArrivedAfter: number | undefined;
  const receiver = await startWebhookReceiver(({ path }) => {
    if (path === "/b") {
      bArrivedAfter ??= aArrived;
      return 204;
    }
    aArrived++;
    if (!holding) return 204;
    return new Promise<number>((answer) => held.push(() => answer(204)));
  });
  const due = Math.ceil((Date.now() + 2_000) / 1000) * 1000;
  for (let i = 0; i < options.aRuns; i += 20) {
    await Promise.all(
      Array.from({ length: 20 }, () =>
        createJob(stack.deps, A, {
          // The longest a target may take: no delivery of A's times out while the test holds it.
          target: { kind: "https", url: `${receiver.url}/a`, concurrency: 100, timeoutSeconds: 30 },
          runAt: iso(due),
        }),
      ),
    );
  }
  // The dispatcher starts once A's backlog is queued and visible (a run due within the second
  // before its message is sent is delayed a second at most), so that every batch is a full ten.
  await until(() => (Date.now() > due + 1_000 ? true : undefined), "for A's runs to be visible");
  const dispatch = createDispatchHandler(
    {
      ...createDispatchDeps(
        stack.deps,
        localReach(new LocalFunctions(new Map()), stack.config.sqsEndpoint ?? ""),
      ),
      tenantShares: new InProcessTenantShares(options.shares),
    },
    stack.config.pushQueueUrl,
  );
  // Invocations that ended while A's deliveries were all unanswered: batches A's runs could not take.
  let ended = 0;
  const handler: typeof dispatch = async (event, context) => {
    const answer = await dispatch(event, context);
    ended++;
    return answer;
  };
  const dispatcher = startSqsEventSource(stack.sqs, stack.config.pushQueueUrl, handler, {
    batchSize: 10,
    concurrency: 1,
    maxConcurrency: options.invocations,
    functionName: "dispatcher",
    timeoutMs: FUNCTION_TIMEOUT_SECONDS.dispatcher * 1000,
    onError: () => undefined,
  });
  try {
    // A's deliveries fill every invocation A may hold, unanswered; an invocation A may not
    // hold gives A's runs back and ends.
    const share = Math.min(options.shares.dispatches, Math.ceil(options.shares.runs / 10));
    const aHolds = Math.min(options.invocations, share) * 10;
    const refused = share < options.invocations ? 1 : 0;
    await until(
      () => (held.length >= aHolds && ended >= refused ? true : undefined),
      `for ${aHolds} of A's deliveries${refused ? " and a batch of A's given back" : ""}`,
      // Well inside A's deliveries' 30 s timeout, after which an invocation would end anyway.
      20_000,
    );
    // B's run, due within the second (its message is visible at once).
    await createJob(stack.deps, B, {
      target: { kind: "https", url: `${receiver.url}/b` },
      runAt: iso(Math.ceil((Date.now() + 1) / 1000) * 1000),
    });
    let rounds = 0;
    for (;;) {
      // A full round held (or the last of A's runs), or B arrived.
      const round = () =>
        held.length > 0 && held.length >= Math.min(aHolds, options.aRuns - aArrived + held.length);
      await until(
        () => (bArrivedAfter !== undefined || (options.rounds && round()) ? true : undefined),
        options.rounds
          ? "for B's run or a round of A's deliveries"
          : "for B's run with A's deliveries unanswered",
      );
      if (bArrivedAfter !== undefined) return { rounds, aBeforeB: bArrivedAfter };
      for (const answer of held.splice(0)) answer();
      rounds++;
    }
  } finally {
    holding = false;
    for (const answer of held.splice(0)) answer();
    await dispatcher.stop();
    receiver.close();
  }
}

describe("the dispatcher under a noisy tenant", () => {
  it("takes tenant B's run at the first invocation that frees up, before A's backlog drains (the fair queue)", async () => {
    // Every invocation holds ten of A's deliveries: A has 40 runs in flight and 60 queued.
    const { rounds, aBeforeB } = await noisyNeighbour("push-fair-queue-order", {
      aRuns: 100,
      invocations: 4,
      shares: { runs: 1_000, dispatches: 4 },
      rounds: true,
    });
    // In queue order B's run would come after all of A's: three rounds.
    expect({ rounds, aDeliveredBeforeB: aBeforeB < 100 }).toEqual({ rounds: 1, aDeliveredBeforeB: true });
  }, 120_000);

  it("keeps invocations out of a tenant's reach by its runs: B's run is taken while A's deliveries are all unanswered (the share)", async () => {
    // A may hold 30 runs: three invocations of ten, unanswered; the fourth keeps receiving (and
    // giving A's runs back), so B's run is met and delivered. Without the share, A's runs fill
    // the fourth invocation too, and B's is never received (the wait for it times out).
    const { rounds, aBeforeB } = await noisyNeighbour("push-fair-share-runs", {
      aRuns: 100,
      invocations: 4,
      shares: { runs: 30, dispatches: 4 },
      rounds: false,
    });
    expect({ rounds, aBeforeB }).toEqual({ rounds: 0, aBeforeB: 30 });
  }, 120_000);

  it("keeps invocations out of a tenant's reach by its dispatches: B's run is taken while A's deliveries are all unanswered", async () => {
    // The same with A held to three invocations (however few runs each would hold).
    const { rounds, aBeforeB } = await noisyNeighbour("push-fair-share-dispatches", {
      aRuns: 100,
      invocations: 4,
      shares: { runs: 1_000, dispatches: 3 },
      rounds: false,
    });
    expect({ rounds, aBeforeB }).toEqual({ rounds: 0, aBeforeB: 30 });
  }, 120_000);
});
