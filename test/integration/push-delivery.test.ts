import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateQueueCommand, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { createJobResponse, errorResponse, jobResponse, webhookSecretResponse } from "@jobsched/contract";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalDispatcher } from "../../local/dispatcher";
import { LocalFunctions } from "../../local/local-functions";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack, type TestStack } from "../support/stack";
import { startWebhookReceiver } from "../support/webhook-receiver";

/**
 * Push delivery end to end (issue 17): jobs with an https, a lambda and an sqs target on
 * dynalite and fauxqs, created through the signed local gateway, delivered by the real
 * dispatcher handler behind a local event source. The webhook receiver checks signatures with
 * the `standardwebhooks` library (an independent implementation of the specification).
 */
interface Delivery {
  readonly path: string;
  readonly at: number;
  readonly headers: Record<string, string>;
  readonly body: { runKey: string; fence: number; attempt: number; scheduledFor: string; payload: unknown };
  readonly verified: boolean;
}

const FUNCTION_ARN = "arn:aws:lambda:us-east-1:000000000000:function:push-test";
const ROLE_ARN = "arn:aws:iam::000000000000:role/jobsched-target-push-test";

let stack: TestStack;
let api: TestApi;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let receiverUrl: string;
let secret = "";
let dispatcher: { stop(): Promise<void> };
const deliveries: Delivery[] = [];
/** What each path answers, in turn; the last answer repeats. */
const answers = new Map<string, number[]>();

const iso = (ms: number) => new Date(ms).toISOString().replace(".000", "");
/** A whole second at least `ahead` ms from now: a run due then is due "on its second". */
const secondAhead = (ahead: number) => Math.ceil((Date.now() + ahead) / 1000) * 1000;

async function until<T>(what: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((done) => setTimeout(done, 50));
  }
}

beforeAll(async () => {
  stack = await createTestStack("push");
  api = await startTestApi(stack);
  receiver = await startWebhookReceiver(({ body, headers, path, at }) => {
    let verified = false;
    try {
      new Webhook(secret).verify(body, headers);
      verified = true;
    } catch {
      verified = false;
    }
    deliveries.push({ path, at, headers, body: JSON.parse(body), verified });
    const queue = answers.get(path) ?? [204];
    const status = queue.length > 1 ? (queue.shift() as number) : (queue[0] as number);
    return {
      status,
      headers: status === 503 ? { "retry-after": "1" } : ({} as Record<string, string>),
      body: status >= 400 ? "nope" : "",
    };
  });
  receiverUrl = receiver.url;

  const folder = mkdtempSync(join(tmpdir(), "jobsched-functions-"));
  writeFileSync(
    join(folder, "record.mjs"),
    "export async function handler(envelope) { (globalThis.pushTestInvocations ??= []).push({ at: Date.now(), envelope }); return 'ok'; }\n",
  );
  writeFileSync(join(folder, "functions.json"), JSON.stringify({ [FUNCTION_ARN]: "record.mjs" }));
  dispatcher = startLocalDispatcher(
    stack.deps,
    stack.sqs,
    stack.config.pushQueueUrl,
    LocalFunctions.fromFile(join(folder, "functions.json")),
    stack.config.sqsEndpoint ?? "",
  );

  const created = await api.tenantA("POST", "/api/v1/webhook-secret");
  expect(created.status).toBe(201);
  secret = bodyOf(webhookSecretResponse, created).secret ?? "";
  expect(secret).toMatch(/^whsec_/);
}, 60_000);

afterAll(async () => {
  await dispatcher?.stop();
  receiver?.close();
  await api?.close();
});

async function createPushJob(target: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const response = await api.tenantA("POST", "/api/v1/jobs", { body: { target, ...extra } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return bodyOf(createJobResponse, response).jobId;
}

describe("push delivery, one job per target kind", () => {
  it("https: delivered on its second, signed so an independent Standard Webhooks verifier accepts it", async () => {
    const due = secondAhead(3_000);
    const jobId = await createPushJob(
      { kind: "https", url: `${receiverUrl}/ok` },
      { runAt: iso(due), payload: { hello: "webhook" } },
    );
    const delivery = await until(() => deliveries.find((d) => d.body.runKey === `${jobId}@${iso(due)}`));
    expect(delivery.verified).toBe(true);
    expect(delivery.at - due).toBeGreaterThanOrEqual(0);
    expect(delivery.headers["webhook-id"]).toBe(delivery.body.runKey);
    expect(delivery.headers["jobsched-fence"]).toBe("1");
    expect(delivery.body).toMatchObject({ fence: 1, attempt: 1, payload: { hello: "webhook" } });
    // A tampered body fails the same verifier: the check above can fail.
    expect(() =>
      new Webhook(secret).verify(
        JSON.stringify({ ...delivery.body, fence: 9 }),
        delivery.headers as Record<string, string>,
      ),
    ).toThrow();
    // The run's success and the job's end are two writes; wait for the second, then check both.
    const done = await until(async () => {
      const job = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));
      return job.status === "active" ? undefined : job;
    });
    expect(done.status).toBe("completed");
    expect(done.runs).toMatchObject([{ status: "succeeded", fence: 1 }]);
  }, 30_000);

  it("lambda: the function in the local functions file is invoked with the envelope on its second", async () => {
    const due = secondAhead(3_000);
    const jobId = await createPushJob(
      { kind: "lambda", functionArn: FUNCTION_ARN, roleArn: ROLE_ARN },
      { runAt: iso(due), payload: { hello: "function" } },
    );
    const invocations = () =>
      (globalThis as { pushTestInvocations?: Array<{ at: number; envelope: Delivery["body"] }> })
        .pushTestInvocations ?? [];
    const call = await until(() => invocations().find((i) => i.envelope.runKey === `${jobId}@${iso(due)}`));
    expect(call.at - due).toBeGreaterThanOrEqual(0);
    expect(call.envelope).toMatchObject({ fence: 1, attempt: 1, payload: { hello: "function" } });
  }, 30_000);

  it("sqs: the envelope lands in the queue on its second", async () => {
    const { QueueUrl = "" } = await stack.sqs.send(
      new CreateQueueCommand({ QueueName: `${stack.config.tableName}-target` }),
    );
    const due = secondAhead(3_000);
    const jobId = await createPushJob(
      { kind: "sqs", queueUrl: QueueUrl, roleArn: ROLE_ARN },
      { runAt: iso(due), payload: { hello: "queue" } },
    );
    const message = await until(async () => {
      const job = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));
      if (job.runs[0]?.error) throw new Error(`run failed: ${job.runs[0].error}`);
      const { Messages = [] } = await stack.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ["SentTimestamp"],
        }),
      );
      return Messages[0];
    });
    const sentAt = Number(message.Attributes?.SentTimestamp);
    expect(sentAt - due).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(message.Body ?? "")).toMatchObject({
      runKey: `${jobId}@${iso(due)}`,
      fence: 1,
      payload: { hello: "queue" },
    });
  }, 30_000);
});

describe("push delivery's outcomes", () => {
  it("a 503 then 200 endpoint is retried (after its Retry-After) and succeeds", async () => {
    answers.set("/flaky", [503, 200]);
    const due = secondAhead(2_000);
    const jobId = await createPushJob(
      { kind: "https", url: `${receiverUrl}/flaky` },
      { runAt: iso(due), retry: { base: "PT1S", cap: "PT2S" } },
    );
    const runKey = `${jobId}@${iso(due)}`;
    const [first, second] = await until(() => {
      const seen = deliveries.filter((d) => d.body.runKey === runKey);
      return seen.length >= 2 ? seen : undefined;
    });
    expect(first?.body).toMatchObject({ attempt: 1, fence: 1 });
    expect(second?.body).toMatchObject({ attempt: 2, fence: 2 });
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    const job = await until(async () => {
      const read = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));
      return read.runs[0]?.status === "succeeded" ? read : undefined;
    });
    expect(job.runs[0]).toMatchObject({ attempt: 2, fence: 2 });
  }, 30_000);

  it("a 400 endpoint dead-letters at once; a replay delivers it again with a higher fence", async () => {
    answers.set("/bad", [400, 204]);
    const due = secondAhead(2_000);
    const jobId = await createPushJob({ kind: "https", url: `${receiverUrl}/bad` }, { runAt: iso(due) });
    const runKey = `${jobId}@${iso(due)}`;
    const dead = await until(async () => {
      const job = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));
      return job.runs[0]?.status === "dead-lettered" ? job.runs[0] : undefined;
    });
    expect(dead).toMatchObject({ attempt: 1, fence: 1, error: "endpoint answered 400: nope" });
    expect(deliveries.filter((d) => d.body.runKey === runKey)).toHaveLength(1);

    const replayed = await api.tenantA("POST", `/api/v1/dead-letters/${dead.runId}/replay`);
    expect(replayed.status).toBe(200);
    const again = await until(() =>
      deliveries.filter((d) => d.body.runKey === runKey).find((d) => d.body.fence > 1),
    );
    expect(again.body.fence).toBe(2);
    expect(again.verified).toBe(true);
    const run = await until(async () => {
      const job = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));
      return job.runs[0]?.status === "succeeded" ? job.runs[0] : undefined;
    });
    expect(run).toMatchObject({ fence: 2, attempt: 1 });
  }, 30_000);

  it("an https job needs the tenant's webhook secret first (409), and a worker type cannot be given with a target", async () => {
    const other = await api.tenantB("POST", "/api/v1/jobs", {
      body: { target: { kind: "https", url: `${receiverUrl}/ok` }, runAt: iso(secondAhead(60_000)) },
    });
    expect(other.status).toBe(409);
    expect(bodyOf(errorResponse, other).error.field).toBe("target");
    const typed = await api.tenantA("POST", "/api/v1/jobs", {
      body: {
        type: "x",
        target: { kind: "https", url: `${receiverUrl}/ok` },
        runAt: iso(secondAhead(60_000)),
      },
    });
    expect(typed.status).toBe(400);
    expect(bodyOf(errorResponse, typed).error.field).toBe("type");
  });
});

describe("push targets in the cloud configuration", () => {
  it("refuses private, loopback, link-local, metadata and plain-http URLs with 400, writing nothing", async () => {
    const cloud = await createTestStack("push-cloud", { settings: { allowPrivateTargets: 0 } });
    const cloudApi = await startTestApi(cloud);
    try {
      expect((await cloudApi.tenantA("POST", "/api/v1/webhook-secret")).status).toBe(201);
      for (const url of [
        "https://10.0.0.5/hook",
        "https://127.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hook",
        "https://[::ffff:192.168.1.1]/hook",
        "https://[fd00:ec2::254]/hook",
        "https://localhost/hook",
        "https://metadata.google.internal/hook",
        "http://hooks.example.com/hook",
        // Issue 27 (finding 10): forms that were accepted.
        "https://[::127.0.0.1]/hook",
        "https://[::ffff:0:127.0.0.1]/hook",
        "https://[2002:7f00:1::]/hook",
        "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
        "https://[64:ff9b:1::a00:1]/hook",
        "https://[64:ff9b::169.254.169.254]/hook",
        "https://localhost./hook",
        "https://metadata.google.internal./hook",
        "https://hooks.example.com:8080/hook",
      ]) {
        const refused = await cloudApi.tenantA("POST", "/api/v1/jobs", {
          body: { target: { kind: "https", url }, runAt: iso(secondAhead(60_000)) },
        });
        expect(refused.status, url).toBe(400);
        expect(bodyOf(errorResponse, refused).error.field, url).toBe("target.url");
      }
      const listed = await cloudApi.tenantA("GET", "/api/v1/jobs");
      expect((listed.body as { jobs: unknown[] }).jobs).toEqual([]);
      const accepted = await cloudApi.tenantA("POST", "/api/v1/jobs", {
        body: {
          target: { kind: "https", url: "https://hooks.example.com/hook" },
          runAt: iso(secondAhead(600_000)),
        },
      });
      expect(accepted.status).toBe(201);
      // An update to one of them is refused the same way, changing nothing.
      const { jobId } = bodyOf(createJobResponse, accepted);
      const patched = await cloudApi.tenantA("PATCH", `/api/v1/jobs/${jobId}`, {
        body: { target: { kind: "https", url: "https://[2002:7f00:1::]/hook" } },
      });
      expect(patched.status).toBe(400);
      expect(bodyOf(errorResponse, patched).error).toMatchObject({
        field: "target.url",
        message: expect.stringMatching(/6to4/),
      });
      const job = bodyOf(jobResponse, await cloudApi.tenantA("GET", `/api/v1/jobs/${jobId}`));
      expect(job.target).toMatchObject({ url: "https://hooks.example.com/hook" });
    } finally {
      await cloudApi.close();
    }
  }, 30_000);
});
