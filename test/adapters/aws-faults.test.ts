import { DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { type HttpRequest, HttpResponse } from "@smithy/protocol-http";
import { describe, expect, it } from "vitest";
import { runIdOf } from "../../lambdas/core/ids";
import {
  type AwsFaultEvent,
  AwsFaultKind,
  type AwsFaultSettings,
  type AwsService,
  awsFaultPlugin,
  FAULT_MENU,
} from "../../local/aws-faults";

/**
 * The local runtime's fault injection (local/aws-faults.ts, decision 0038) on real SDK clients
 * whose requests are answered in process (no emulator): the share of attempts it fails, the
 * shape of each fault as the SDK sees it (its own exception class, status code and fault side),
 * and that the SDK's own retry middleware classifies each as retryable and retries it.
 */

const JOB = "j_0123456789abcdefghij";
const AT = 1_796_000_000_000;
const RUN = runIdOf(JOB, AT);

/** What the stub endpoint saw, by operation. */
type Seen = Map<string, number>;

/** An endpoint that answers every request with success (a received message for ReceiveMessage). */
function stubHandler(seen: Seen) {
  return {
    async handle(request: HttpRequest) {
      const target = Object.entries(request.headers).find(([name]) => name.toLowerCase() === "x-amz-target");
      const operation = String(target?.[1] ?? "").split(".")[1] ?? "";
      seen.set(operation, (seen.get(operation) ?? 0) + 1);
      const body =
        operation === "ReceiveMessage"
          ? {
              Messages: [
                {
                  MessageId: "m-1",
                  ReceiptHandle: "handle-1",
                  Body: JSON.stringify({ runId: RUN, jobId: JOB, scheduledFor: AT }),
                },
              ],
            }
          : {};
      return {
        response: new HttpResponse({
          statusCode: 200,
          headers: { "content-type": "application/x-amz-json-1.0" },
          body: new TextEncoder().encode(JSON.stringify(body)),
        }),
      };
    },
  };
}

const stubConfig = (seen: Seen, maxAttempts?: number) => ({
  region: "us-east-1",
  endpoint: "http://aws.stub.invalid",
  credentials: { accessKeyId: "stub", secretAccessKey: "stub" },
  requestHandler: stubHandler(seen),
  ...(maxAttempts === undefined ? {} : { maxAttempts }),
});

interface Faulty {
  readonly events: AwsFaultEvent[];
  readonly seen: Seen;
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
}

/** Clients with the plugin; `maxAttempts` undefined keeps the SDK's own (DynamoDB 4, SQS 3). */
function faulty(settings: Omit<AwsFaultSettings, "timeoutMs">, maxAttempts?: number): Faulty {
  const events: AwsFaultEvent[] = [];
  const seen: Seen = new Map();
  const all: AwsFaultSettings = { timeoutMs: 5, record: (e) => events.push(e), ...settings };
  const dynamo = new DynamoDBClient(stubConfig(seen, maxAttempts));
  dynamo.middlewareStack.use(awsFaultPlugin("dynamodb", all));
  const sqs = new SQSClient({ ...stubConfig(seen, maxAttempts), md5: false });
  sqs.middlewareStack.use(awsFaultPlugin("sqs", all));
  return { events, seen, dynamo, sqs };
}

/** Draws in order, then "no fault" for ever. */
function scripted(draws: number[]): () => number {
  const left = [...draws];
  return () => left.shift() ?? 0.999;
}

/** The draw that picks the menu's shape `index` (shares are cumulative, in menu order). */
function drawFor(service: AwsService, index: number): number {
  const menu = FAULT_MENU[service];
  const total = menu.reduce((sum, s) => sum + s.weight, 0);
  const before = menu.slice(0, index).reduce((sum, s) => sum + s.weight, 0);
  return (before + (menu[index]?.weight ?? 0) / 2) / total;
}

/** A small seeded generator (mulberry32), so the share test is the same every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const faults = (events: readonly AwsFaultEvent[]) =>
  events.filter((e): e is Extract<AwsFaultEvent, { kind: "aws-fault" }> => e.kind === "aws-fault");

const getItem = () =>
  new GetItemCommand({ TableName: "t", Key: { pk: { S: `JOB#${JOB}` }, sk: { S: "JOB" } } });
const deleteMessage = () =>
  new DeleteMessageCommand({ QueueUrl: "http://aws.stub.invalid/0/q", ReceiptHandle: "h" });

describe("AWS fault injection", () => {
  it("fails about the asked share of attempts (2%: 4,000 calls, no retries)", async () => {
    // Prepare
    const f = faulty({ rate: 0.02, random: seeded(27) }, 1);
    // Act
    let failed = 0;
    for (let i = 0; i < 4_000; i++) {
      await f.dynamo.send(getItem()).catch(() => {
        failed += 1;
      });
    }
    // Assess: every failure is a recorded fault, about one attempt in fifty.
    expect(faults(f.events)).toHaveLength(failed);
    expect(failed).toBeGreaterThanOrEqual(60);
    expect(failed).toBeLessThanOrEqual(100);
    const tallied = f.events.flatMap((e) => (e.kind === "aws-requests" ? [e.count] : []));
    expect(tallied.reduce((a, b) => a + b, 0)).toBe(4_000);
    const kinds = new Set(faults(f.events).map((e) => e.fault));
    expect(kinds).toEqual(new Set(Object.values(AwsFaultKind)));
  });

  it("injects nothing at rate 0", async () => {
    const f = faulty({ rate: 0, random: seeded(1) }, 1);
    for (let i = 0; i < 200; i++) await f.dynamo.send(getItem());
    expect(faults(f.events)).toEqual([]);
  });

  for (const service of ["dynamodb", "sqs"] as const) {
    FAULT_MENU[service].forEach((shape, index) => {
      const name = shape.type ?? shape.fault;
      it(`${service}: answers ${name} as AWS does, and the SDK retries it`, async () => {
        // Prepare: the first attempt fails with this shape, refused before it reached the service.
        const once = faulty({ rate: 0.5, random: scripted([0, drawFor(service, index), 0.9]) }, 1);
        const send = () =>
          service === "dynamodb" ? once.dynamo.send(getItem()) : once.sqs.send(deleteMessage());
        // Act
        const error = (await send().then(
          () => undefined,
          (e: unknown) => e,
        )) as
          | (Error & { $metadata?: { httpStatusCode?: number }; $fault?: string; code?: string })
          | undefined;
        // Assess: the error as the SDK's deserializer (or Node's HTTP stack) makes it.
        expect(error).toBeDefined();
        if (shape.fault === AwsFaultKind.Timeout) expect(error?.name).toBe("TimeoutError");
        else if (shape.fault === AwsFaultKind.SocketError) expect(error?.code).toBe("ECONNRESET");
        else {
          expect(error?.name).toBe(shape.type);
          expect(error?.$metadata?.httpStatusCode).toBe(shape.status);
          expect(error?.$fault).toBe((shape.status ?? 500) < 500 ? "client" : "server");
        }
        expect(once.seen.size).toBe(0);
        const [recorded] = faults(once.events);
        expect(recorded).toMatchObject({ service, fault: shape.fault, applied: false, attempt: 1 });

        // The same fault with the SDK's own retry strategy: retried, and the call succeeds.
        const retried = faulty({ rate: 0.5, random: scripted([0, drawFor(service, index), 0.9]) });
        const output =
          service === "dynamodb"
            ? await retried.dynamo.send(getItem())
            : await retried.sqs.send(deleteMessage());
        expect(output.$metadata.attempts).toBe(2);
        expect(output.$metadata.httpStatusCode).toBe(200);
        expect([...retried.seen.values()]).toEqual([1]);
      });
    });
  }

  it("carries out a request whose answer it loses, so the retry meets its effect", async () => {
    // Prepare: a timeout after the write was applied (the "applied" draw under 0.5).
    const timeout = FAULT_MENU.dynamodb.findIndex((s) => s.fault === AwsFaultKind.Timeout);
    const f = faulty({ rate: 0.5, random: scripted([0, drawFor("dynamodb", timeout), 0.1]) });
    // Act
    const output = await f.dynamo.send(
      new PutItemCommand({
        TableName: "t",
        Item: { pk: { S: `JOB#${JOB}` }, sk: { S: `RUN#${String(AT).padStart(15, "0")}` } },
      }),
    );
    // Assess: two writes reached the service for one call.
    expect(output.$metadata.attempts).toBe(2);
    expect(f.seen.get("PutItem")).toBe(2);
    expect(faults(f.events)[0]).toMatchObject({ fault: "timeout", applied: true, runs: [RUN], jobs: [JOB] });
  });

  it("names the run a request was about: a run item's key, or the message a receipt handle came with", async () => {
    // Prepare
    const f = faulty({ rate: 0.5, random: scripted([0.9, 0, drawFor("sqs", 0)]) }, 1);
    // Act: a receive (no fault), then a delete of its message (throttled).
    await f.sqs.send(new ReceiveMessageCommand({ QueueUrl: "http://aws.stub.invalid/0/q" }));
    await f.sqs
      .send(new DeleteMessageCommand({ QueueUrl: "http://aws.stub.invalid/0/q", ReceiptHandle: "handle-1" }))
      .catch(() => undefined);
    // Assess
    expect(faults(f.events)).toEqual([
      expect.objectContaining({
        operation: "DeleteMessage",
        error: "RequestThrottled",
        runs: [RUN],
        jobs: [JOB],
      }),
    ]);
    // A DynamoDB update of the run's item.
    const d = faulty({ rate: 0.5, random: scripted([0, drawFor("dynamodb", 0)]) }, 1);
    await d.dynamo
      .send(
        new UpdateItemCommand({
          TableName: "t",
          Key: { pk: { S: `JOB#${JOB}` }, sk: { S: `RUN#${String(AT).padStart(15, "0")}` } },
          UpdateExpression: "SET #s = :s",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":s": { S: "leased" } },
        }),
      )
      .catch(() => undefined);
    expect(faults(d.events)[0]).toMatchObject({ operation: "UpdateItem", runs: [RUN], jobs: [JOB] });
  });

  it("records a call whose every attempt failed (the SDK's retries could not save it)", async () => {
    // Prepare: every attempt answered 503 ServiceUnavailable.
    const unavailable = FAULT_MENU.sqs.findIndex((s) => s.fault === AwsFaultKind.Unavailable);
    const f = faulty({ rate: 1, random: () => drawFor("sqs", unavailable) });
    // Act
    const error = await f.sqs.send(deleteMessage()).catch((e: unknown) => e as Error);
    // Assess
    expect(error).toMatchObject({ name: "ServiceUnavailable" });
    expect(faults(f.events).map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(f.events.filter((e) => e.kind === "aws-fault-surfaced")).toEqual([
      expect.objectContaining({ operation: "DeleteMessage", error: "ServiceUnavailable", attempts: 3 }),
    ]);
  });
});
