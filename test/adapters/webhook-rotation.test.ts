import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Targets } from "../../lambdas/adapters/targets/target-invoker";
import type { RunEnvelope, Target } from "../../lambdas/core/target";
import { rotateWebhookSecret } from "../../lambdas/core/use-cases/webhook-secrets";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { createTestStack } from "../support/stack";
import { type Delivery, startWebhookReceiver } from "../support/webhook-receiver";

/**
 * Issue 27, finding 8: a rotation signs with the new secret from its answer on, on every
 * dispatcher instance, also one that read the secrets a moment before. Two `Targets` (two
 * dispatcher instances, each with its own copy of the secrets) share one store (in memory, and
 * the DynamoDB store on dynalite); a receiver that switched to the secret the rotation
 * answered checks every delivery with the `standardwebhooks` library and that secret alone.
 */
const caller = { tenant: "t", principal: "arn:aws:iam::111122223333:role/t" };
const envelope: RunEnvelope = {
  runKey: "j_1@2027-01-04T09:00:00Z",
  runId: "r_1",
  jobId: "j_1",
  fence: 1,
  scheduledFor: "2027-01-04T09:00:00Z",
  attempt: 0,
  payload: { hello: "world" },
};
const noAws = {
  lambda: () => {
    throw new Error("no Lambda here");
  },
  sqs: () => {
    throw new Error("no SQS here");
  },
};

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
const received: Delivery[] = [];
beforeAll(async () => {
  receiver = await startWebhookReceiver((delivery) => {
    received.push(delivery);
    return 204;
  });
});
afterAll(() => receiver.close());

/** A dispatcher instance: its own Targets (and so its own copy of the secrets), the shared store. */
function instance(deps: MemoryDeps): Targets {
  return new Targets(
    deps.webhookSecrets,
    noAws,
    { allowPrivate: true, ports: [443] },
    { namePattern: "jobsched-target-*" },
    () => deps.clock.now(),
  );
}

/** Delivers once through `targets` and returns the request the receiver got. */
async function deliver(targets: Targets): Promise<Delivery> {
  const target: Target = { kind: "https", url: `${receiver.url}/hook`, timeoutSeconds: 5, concurrency: 1 };
  const result = await targets.deliver(target, envelope, { tenant: caller.tenant, timeoutMs: 5_000 });
  expect(result).toEqual({ ok: true });
  const delivery = received.at(-1);
  if (!delivery) throw new Error("nothing received");
  return delivery;
}

/** Whether a receiver holding only `secret` accepts the delivery (Standard Webhooks' own check). */
function verifies(secret: string | undefined, delivery: Delivery): boolean {
  if (secret === undefined) throw new Error("the rotation's answer shows no secret");
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers);
    return true;
  } catch {
    return false;
  }
}

const stores: Array<[string, () => Promise<MemoryDeps>]> = [
  // The fake clock starts now: the receiver's library checks the timestamp against its own.
  ["in memory", async () => memoryDeps(Date.now())],
  [
    "on DynamoDB (dynalite)",
    async () => {
      const stack = await createTestStack("rotation");
      return { ...memoryDeps(Date.now()), webhookSecrets: stack.deps.webhookSecrets } as MemoryDeps;
    },
  ],
];

describe.each(stores)("a webhook secret rotation, the secrets %s", (_name, make) => {
  it("signs with the new secret from its answer on, on an instance that read the secrets just before", async () => {
    const deps = await make();
    const first = await rotateWebhookSecret(deps, caller);
    const a = instance(deps);
    const b = instance(deps);
    deps.clock.advance(60_000); // rotations are a minute apart at the most often
    expect(verifies(first.body.secret, await deliver(a))).toBe(true);
    expect(verifies(first.body.secret, await deliver(b))).toBe(true); // b keeps its copy

    const rotated = await rotateWebhookSecret(deps, caller);
    expect(rotated.body.secret).not.toBe(first.body.secret);
    // At once, on both instances: the receiver switched to the new secret accepts every delivery.
    const fromB = await deliver(b);
    expect(verifies(rotated.body.secret, fromB)).toBe(true);
    expect(verifies(rotated.body.secret, await deliver(a))).toBe(true);
    // And the previous secret still verifies, for receivers that have not switched yet.
    expect(verifies(first.body.secret, fromB)).toBe(true);
    deps.clock.advance(1_000);
    expect(verifies(rotated.body.secret, await deliver(b))).toBe(true);
  });

  it("signs with the new secret at once after rotating a secret stored before the next one existed", async () => {
    const deps = await make();
    const legacy = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;
    await deps.webhookSecrets.put(caller.tenant, { current: legacy, createdAt: deps.clock.now() }, undefined);
    const b = instance(deps);
    expect(verifies(legacy, await deliver(b))).toBe(true);
    const rotated = await rotateWebhookSecret(deps, caller);
    const after = await deliver(b);
    expect(verifies(rotated.body.secret, after)).toBe(true);
    expect(verifies(legacy, after)).toBe(true);
  });
});
