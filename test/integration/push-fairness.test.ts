import { ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../../lambdas/core/caller";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { FUNCTION_TIMEOUT_SECONDS } from "../../lambdas/definitions/functions";
import { createDispatchDeps, createDispatchHandler } from "../../lambdas/handlers/dispatch";
import { LocalFunctions, localReach } from "../../local/local-functions";
import { startSqsEventSource } from "../../local/sqs-event-source";
import { createTestStack, type TestStack } from "../support/stack";
import { startWebhookReceiver } from "../support/webhook-receiver";

/**
 * Push fairness (issue 27, finding 7; decision 0031) on dynalite and fauxqs: the push queue's
 * messages carry their tenant as MessageGroupId, which makes it an SQS fair queue, and fauxqs
 * (patched, patches/fauxqs+1.9.2.patch) hands out a quiet tenant's messages before a noisy
 * one's as AWS documents. Nothing here is timed: the tests count what came before what.
 */
const A: Caller = { tenant: "tenant-a", principal: "arn:aws:iam::000000000000:user/a" };
const B: Caller = { tenant: "tenant-b", principal: "arn:aws:iam::000000000000:user/b" };
const SECRET = `whsec_${Buffer.from("push-fairness-secret-of-32-bytes").toString("base64")}`;

async function until<T>(what: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error("timed out waiting");
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

describe("the dispatcher under a noisy tenant", () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Tenant A creates its jobs faster than the default create quota allows.
    stack = await createTestStack("push-fair-dispatch", { settings: { tenantCreatesPerSecond: 0 } });
    for (const { tenant } of [A, B]) {
      await stack.deps.webhookSecrets.put(tenant, { current: SECRET, createdAt: Date.now() }, undefined);
    }
  }, 60_000);
  /** Tenant A's runs, all due in the same second at one slow endpoint. */
  const A_RUNS = 100;
  /** The local event source's invocations: 4 batches of 10, all of them held by A at first. */
  const INVOCATIONS = 4;
  const held: Array<() => void> = [];
  let holding = true;
  let aArrived = 0;
  let bArrivedAfter: number | undefined;
  let dispatcher: { stop(): Promise<void> } | undefined;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;

  afterAll(async () => {
    holding = false;
    for (const answer of held.splice(0)) answer();
    await dispatcher?.stop();
    receiver?.close();
  });

  it("takes tenant B's run while A's slow deliveries fill every invocation, before A's backlog drains", async () => {
    // A's endpoint answers only when the test lets it (a slow endpoint, without timing); B's at once.
    receiver = await startWebhookReceiver(({ path }) => {
      if (path === "/b") {
        bArrivedAfter ??= aArrived;
        return 204;
      }
      aArrived++;
      if (!holding) return 204;
      return new Promise<number>((answer) => held.push(() => answer(204)));
    });
    const due = Math.ceil((Date.now() + 2_000) / 1000) * 1000;
    for (let i = 0; i < A_RUNS; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, () =>
          createJob(stack.deps, A, {
            target: { kind: "https", url: `${receiver?.url}/a`, concurrency: 100 },
            runAt: iso(due),
          }),
        ),
      );
    }
    // The dispatcher starts once A's backlog is queued, so that every batch is a full ten. One
    // poller, so that the invocations are exactly INVOCATIONS batches.
    const handler = createDispatchHandler(
      createDispatchDeps(
        stack.deps,
        localReach(new LocalFunctions(new Map()), stack.config.sqsEndpoint ?? ""),
      ),
      stack.config.pushQueueUrl,
    );
    dispatcher = startSqsEventSource(stack.sqs, stack.config.pushQueueUrl, handler, {
      batchSize: 10,
      concurrency: 1,
      maxConcurrency: INVOCATIONS,
      functionName: "dispatcher",
      timeoutMs: FUNCTION_TIMEOUT_SECONDS.dispatcher * 1000,
      onError: () => undefined,
    });
    // Every invocation holds ten of A's deliveries, unanswered: A has 40 runs in flight.
    await until(() => (held.length === INVOCATIONS * 10 ? true : undefined));
    // B's run, due within the second (its message is visible at once).
    await createJob(stack.deps, B, {
      target: { kind: "https", url: `${receiver.url}/b` },
      runAt: iso(Math.ceil((Date.now() + 1) / 1000) * 1000),
    });
    // A's endpoint answers a round of deliveries at a time, until B's run arrives.
    let rounds = 0;
    while (bArrivedAfter === undefined) {
      // A full round held (or the last of A's runs), or B arrived.
      const round = () =>
        held.length > 0 && held.length >= Math.min(INVOCATIONS * 10, A_RUNS - aArrived + held.length);
      await until(() => (bArrivedAfter !== undefined || round() ? true : undefined));
      if (bArrivedAfter !== undefined) break;
      for (const answer of held.splice(0)) answer();
      rounds++;
    }
    // B waited for one free invocation, not for A's backlog: taken in the first round that freed
    // one (in queue order it would have come after all of A's runs, three rounds).
    expect({ rounds, aDeliveredBeforeB: bArrivedAfter }).toEqual({
      rounds: 1,
      aDeliveredBeforeB: expect.any(Number),
    });
    expect(bArrivedAfter).toBeLessThan(A_RUNS);
  }, 120_000);
});
