import type { LookupOptions } from "node:dns";
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts";
import type { SQSEvent } from "aws-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import {
  awsFailure,
  invokeFunction,
  sendToQueue,
  TenantRoles,
} from "../../lambdas/adapters/targets/aws-targets";
import { guardedLookup, PRIVATE_DESTINATION } from "../../lambdas/adapters/targets/guarded-lookup";
import { deliverWebhook, MAX_RESPONSE_BYTES, resultOf } from "../../lambdas/adapters/targets/https-target";
import { retryAfterSeconds } from "../../lambdas/adapters/targets/retry-after";
import { InProcessTargetSlots } from "../../lambdas/adapters/targets/target-slots";
import { webhookSignature } from "../../lambdas/adapters/targets/webhook-signature";
import type { RunEnvelope } from "../../lambdas/core/target";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { rotateWebhookSecret } from "../../lambdas/core/use-cases/webhook-secrets";
import { createDispatchHandler } from "../../lambdas/handlers/dispatch";
import { memoryDeps } from "../support/memory-ports";

/**
 * The push adapters (issue 17): Standard Webhooks signatures checked by the `standardwebhooks`
 * library, the webhook POST against real local servers (answers, redirects, timeouts, large
 * bodies, refused destinations), the Lambda and SQS calls and the role assumption with
 * aws-sdk-client-mock, and the dispatcher handler's batch item failures.
 */
const SECRET = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;
const OTHER = `whsec_${Buffer.from("fedcba9876543210fedcba9876543210").toString("base64")}`;
const envelope: RunEnvelope = {
  runKey: "j_1@2027-01-04T09:00:00Z",
  runId: "r_1",
  jobId: "j_1",
  fence: 3,
  scheduledFor: "2027-01-04T09:00:00Z",
  attempt: 2,
  payload: { hello: "world" },
};

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});
async function serve(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}
const local = {
  secretsOf: async () => [SECRET],
  rules: { allowPrivate: true, ports: [443] },
  now: Date.now,
};
const context = { tenant: "t", timeoutMs: 2_000 };

describe("Standard Webhooks signatures", () => {
  it("verify with an independent implementation, under either secret during a rotation", () => {
    const body = JSON.stringify(envelope);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      "webhook-id": envelope.runKey,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": webhookSignature([SECRET, OTHER], envelope.runKey, timestamp, body),
    };
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(envelope);
    expect(new Webhook(OTHER).verify(body, headers)).toEqual(envelope);
    expect(() => new Webhook(SECRET).verify(`${body} `, headers)).toThrow();
    const third = `whsec_${Buffer.from("x".repeat(32)).toString("base64")}`;
    expect(() => new Webhook(third).verify(body, headers)).toThrow();
  });
});

describe("the webhook POST", () => {
  it("sends the envelope signed, with the run key, fence and attempt, and takes 2xx as success", async () => {
    let seen: { headers: Record<string, string>; body: string } | undefined;
    const url = await serve((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (c: Buffer) => chunks.push(c));
      request.on("end", () => {
        seen = { headers: request.headers as Record<string, string>, body: Buffer.concat(chunks).toString() };
        response.writeHead(202).end();
      });
    });
    expect(await deliverWebhook(url, envelope, context, local)).toEqual({ ok: true });
    expect(new Webhook(SECRET).verify(seen?.body ?? "", seen?.headers ?? {})).toEqual(envelope);
    expect(seen?.headers).toMatchObject({
      "jobsched-run-key": envelope.runKey,
      "jobsched-fence": "3",
      "jobsched-attempt": "2",
    });
  });

  it("retries 408, 425, 429 and 5xx (with Retry-After), ends other 4xx and redirects, bounds the body read", async () => {
    const answers = [503, 429, 408, 425, 500, 400, 404, 302];
    const results = [];
    for (const status of answers) {
      const url = await serve((_request, response) => {
        response.writeHead(status, { "retry-after": "7", location: "https://elsewhere.example.com/" });
        response.end(status === 500 ? "x".repeat(MAX_RESPONSE_BYTES * 4) : "why");
      });
      results.push(await deliverWebhook(url, envelope, context, local));
    }
    expect(results.map((r) => (r.ok ? "ok" : r.retryable))).toEqual([
      true,
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(results[0]).toMatchObject({ retryAfterSeconds: 7, error: "endpoint answered 503: why" });
    expect(results[4]?.ok === false && results[4].error.length).toBeLessThan(600);
    expect(results[7]).toMatchObject({
      error: expect.stringMatching(/302 \(redirect to https:\/\/elsewhere.example.com\/, not followed\)/),
    });
  });

  it("fails retryably when the endpoint does not answer in time, or cannot be reached", async () => {
    const url = await serve(() => undefined); // never answers
    const slow = await deliverWebhook(url, envelope, { tenant: "t", timeoutMs: 200 }, local);
    expect(slow).toMatchObject({
      ok: false,
      retryable: true,
      error: expect.stringMatching(/no answer within 200 ms/),
    });
    const closed = await deliverWebhook("http://127.0.0.1:9/hook", envelope, context, local);
    expect(closed).toMatchObject({ ok: false, retryable: true });
  });

  it("in AWS refuses plain http and private addresses for good, also a name that resolves to one", async () => {
    const cloud = { ...local, rules: { allowPrivate: false, ports: [443, 9] } };
    expect(await deliverWebhook("http://hooks.example.com/", envelope, context, cloud)).toMatchObject({
      ok: false,
      retryable: false,
      error: "destination refused: target.url must be an https:// URL",
    });
    expect(await deliverWebhook("https://127.0.0.1:9/", envelope, context, cloud)).toMatchObject({
      retryable: false,
      error: expect.stringMatching(/127.0.0.1 is a loopback/),
    });
    // A job stored before the rules of issue 27 (finding 10) is refused before any connection.
    expect(await deliverWebhook("https://[2002:7f00:1::]/", envelope, context, cloud)).toMatchObject({
      retryable: false,
      error: expect.stringMatching(/2002:7f00:1:: is a 6to4 address/),
    });
    expect(await deliverWebhook("https://hooks.example.com:22/", envelope, context, cloud)).toMatchObject({
      retryable: false,
      error: expect.stringMatching(/destination refused: target.url must use port 443 or 9, not 22/),
    });
    // localhost resolves (from /etc/hosts) to a loopback address: refused at connect.
    expect(await deliverWebhook("https://localhost:9/", envelope, context, cloud)).toMatchObject({
      retryable: false,
      error: expect.stringMatching(/destination refused: localhost resolves to/),
    });
    const error = await new Promise<NodeJS.ErrnoException | null>((done) =>
      guardedLookup("localhost", {}, done),
    );
    expect(error?.code).toBe(PRIVATE_DESTINATION);
  });

  it("refuses at connect every address class create refuses, as the lookup answers them", async () => {
    // The system resolver answers an address with itself, no DNS needed: what a name resolving
    // to it would give the socket. Issue 27 (finding 10): these passed the guard.
    const lookUp = (name: string, options: LookupOptions = {}) =>
      new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((done) =>
        guardedLookup(name, options, (error, address) => done({ error, address })),
      );
    for (const [address, problem] of [
      ["::7f00:1", /IPv4-compatible/],
      ["::808:808", /IPv4-compatible/],
      ["::ffff:0:7f00:1", /IPv4-translated/],
      ["2002:7f00:1::", /6to4/],
      ["2001:0:4136:e378:8000:63bf:3fff:fdd2", /Teredo/],
      ["64:ff9b:1::a00:1", /NAT64/],
      ["64:ff9b::808:808", /NAT64/],
      ["::ffff:169.254.169.254", /link-local/],
      ["fd00:ec2::254", /unique local/],
      ["100.64.0.1", /carrier-grade NAT/],
    ] as const) {
      const { error } = await lookUp(address);
      expect(error?.code, address).toBe(PRIVATE_DESTINATION);
      expect(error?.message, address).toMatch(problem);
    }
    // A public address passes, in either of the forms Node asks for.
    expect(await lookUp("8.8.8.8")).toEqual({ error: null, address: "8.8.8.8" });
    expect((await lookUp("2606:4700::1111", { all: true })).address).toEqual([
      { address: "2606:4700::1111", family: 6 },
    ]);
  });

  it("without a webhook secret fails for good, naming the fix", async () => {
    const url = await serve((_q, response) => response.writeHead(204).end());
    expect(
      await deliverWebhook(url, envelope, context, { ...local, secretsOf: async () => [] }),
    ).toMatchObject({
      retryable: false,
      error: expect.stringMatching(/POST \/api\/v1\/webhook-secret/),
    });
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    const now = Date.parse("2027-01-04T09:00:00Z");
    expect(retryAfterSeconds("120", now)).toBe(120);
    expect(retryAfterSeconds("Mon, 04 Jan 2027 09:01:30 GMT", now)).toBe(90);
    expect(retryAfterSeconds("Mon, 04 Jan 2027 08:00:00 GMT", now)).toBe(0);
    expect(retryAfterSeconds("soon", now)).toBeUndefined();
    expect(retryAfterSeconds("2027", now)).toBe(2027);
    expect(retryAfterSeconds(undefined, now)).toBeUndefined();
    expect(resultOf({ status: 204, retryAfter: undefined, location: undefined, excerpt: "" }, now)).toEqual({
      ok: true,
    });
  });
});

describe("Lambda and SQS targets", () => {
  const lambda = mockClient(LambdaClient);
  const sqs = mockClient(SQSClient);
  const sts = mockClient(STSClient);
  afterEach(() => {
    lambda.reset();
    sqs.reset();
    sts.reset();
  });

  it("invokes the function with the envelope; a function error is a retryable failure", async () => {
    lambda
      .on(InvokeCommand)
      .resolvesOnce({ StatusCode: 200 })
      .resolvesOnce({
        StatusCode: 200,
        FunctionError: "Unhandled",
        Payload: new TextEncoder().encode('{"errorMessage":"boom"}') as never,
      });
    const client = new LambdaClient({ region: "eu-west-1" });
    const arn = "arn:aws:lambda:eu-west-1:123456789012:function:f:live";
    expect(await invokeFunction(client, arn, envelope, 1_000)).toEqual({ ok: true });
    expect(
      JSON.parse(Buffer.from((lambda.call(0).args[0].input as { Payload: Uint8Array }).Payload).toString()),
    ).toEqual(envelope);
    expect(lambda.call(0).args[0].input).toMatchObject({
      FunctionName: arn,
      InvocationType: "RequestResponse",
    });
    expect(await invokeFunction(client, arn, envelope, 1_000)).toMatchObject({
      ok: false,
      retryable: true,
      error: 'function error (Unhandled): {"errorMessage":"boom"}',
    });
  });

  it("ends a refusal the tenant must fix (403, 404) for good, retries throttling and 5xx", () => {
    const failure = (name: string, status: number) =>
      awsFailure(Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } }), "invoke f");
    expect(failure("AccessDeniedException", 403)).toMatchObject({ retryable: false });
    expect(failure("ResourceNotFoundException", 404)).toMatchObject({ retryable: false });
    expect(failure("TooManyRequestsException", 429)).toMatchObject({ retryable: true });
    expect(failure("ServiceException", 500)).toMatchObject({ retryable: true });
    expect(awsFailure(new Error("socket hang up"), "invoke f")).toMatchObject({ retryable: true });
  });

  it("sends the envelope to a queue, with the run key's hash as deduplication id on a FIFO queue", async () => {
    sqs.on(SendMessageCommand).resolves({});
    const client = new SQSClient({ region: "eu-west-1" });
    await sendToQueue(client, "https://sqs.eu-west-1.amazonaws.com/123456789012/q", envelope, 1_000);
    await sendToQueue(client, "https://sqs.eu-west-1.amazonaws.com/123456789012/q.fifo", envelope, 1_000);
    expect(sqs.call(0).args[0].input).not.toHaveProperty("MessageDeduplicationId");
    expect(sqs.call(1).args[0].input).toMatchObject({
      MessageGroupId: "j_1",
      MessageDeduplicationId: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(JSON.parse(String((sqs.call(1).args[0].input as { MessageBody: string }).MessageBody))).toEqual(
      envelope,
    );
  });

  it("assumes the tenant's role with the tenant as the external id and the jobsched-tenant session tag", async () => {
    const expiration = new Date(Date.now() + 900_000);
    sts.on(AssumeRoleCommand).resolves({
      Credentials: { AccessKeyId: "AKIA", SecretAccessKey: "s", SessionToken: "t", Expiration: expiration },
    });
    const role = "arn:aws:iam::123456789012:role/target";
    const roles = new TenantRoles(new STSClient({ region: "eu-west-1" }));
    const credentials = await roles.credentialsFor(role, "billing team")();
    expect(credentials.accessKeyId).toBe("AKIA");
    await roles.credentialsFor(role, "billing team")(); // kept until a minute before they expire
    expect(sts.calls()).toHaveLength(1);
    expect(sts.call(0).args[0].input).toMatchObject({
      RoleArn: role,
      ExternalId: "billing team",
      RoleSessionName: "jobsched-billing-team",
      Tags: [{ Key: "jobsched-tenant", Value: "billing team" }],
    });
    // A tenant STS cannot take as a tag value is tagged with its hash (docs/deploy.md).
    await roles.credentialsFor(role, "arn:aws:iam::123456789012:role/a,b")();
    expect(sts.call(1).args[0].input).toMatchObject({
      ExternalId: "arn:aws:iam::123456789012:role/a,b",
      Tags: [{ Key: "jobsched-tenant", Value: expect.stringMatching(/^sha256:[A-Za-z0-9+/]{43}=$/) }],
    });
  });
});

describe("the dispatcher handler", () => {
  it("reports done the records whose runs it finished, and as failures the ones it keeps", async () => {
    const now = Date.parse("2027-01-04T09:00:00Z");
    const deps = memoryDeps(now);
    const caller = { tenant: "t", principal: "arn:aws:iam::1:role/t" };
    await rotateWebhookSecret(deps, caller);
    const target = { kind: "https", url: "https://hooks.example.com/" };
    await createJob(deps, caller, { target, runAt: new Date(now).toISOString() });
    const [due] = deps.queue.sent.map((s) => s.message);
    // A copy of a run due in ten minutes (a repair's resend): hidden again, not leased.
    const later = { ...due, scheduledFor: now + 10 * 60_000 };
    const delivered: string[] = [];
    const handler = createDispatchHandler(
      {
        ...deps,
        targets: {
          deliver: async (_t, e) => {
            delivered.push(e.runKey);
            return { ok: true };
          },
        },
        targetSlots: new InProcessTargetSlots(),
        sleep: async (ms) => deps.clock.advance(ms),
      },
      "https://sqs.local/push",
    );
    const record = (id: string, body: unknown) => ({
      messageId: id,
      receiptHandle: `handle-${id}`,
      body: JSON.stringify(body),
      attributes: { ApproximateReceiveCount: "1" },
    });
    const event = { Records: [record("due", due), record("later", later), record("junk", "not a run")] };
    const answer = await handler(event as unknown as SQSEvent);
    expect(delivered).toHaveLength(1);
    // The due run's record is done (the event source deletes it); the later one is kept hidden;
    // the unreadable one is done too (dropped).
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: "later" }]);
    expect(deps.queue.deleted).toEqual([]);
  });
});
