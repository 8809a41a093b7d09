// Runs on Node.js 22 (the Lambda runtime's major version), started by scripts/test-bundles.ts:
// imports the synthesized Lambda bundles (cdk.out) and drives one one-off job through them,
// against the emulators the runner started: create (API), tick, sweep (sweeper), lease and
// complete (lease protocol), then reads the job back (API); then one push job: its webhook
// secret (API), create, tick, sweep, delivery (dispatcher, as the push queue's event source
// hands it over) to a receiver here, and the job read back. Only the AWS SDK sits beside the
// bundles, as the Lambda runtime provides it. Prints one line per step; exits 1 on a failure.
import { createHmac, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";

const bundles = JSON.parse(process.env.JOBSCHED_BUNDLES ?? "{}");
const TENANT = process.env.JOBSCHED_TENANT;
const WORKER = process.env.JOBSCHED_WORKER;

function context(functionName) {
  const started = Date.now();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: "256",
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "bundle-test",
    getRemainingTimeInMillis: () => Math.max(0, 29_000 - (Date.now() - started)),
  };
}

/** An HTTP API (payload 2.0) event as IAM auth delivers it. */
function httpEvent(routeKey, userArn, { body, pathParameters } = {}) {
  const [method, path] = routeKey.split(" ");
  return {
    version: "2.0",
    routeKey,
    rawPath: path,
    rawQueryString: "",
    headers: { "content-type": "application/json" },
    pathParameters,
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: {
      accountId: "000000000000",
      apiId: "bundle",
      domainName: "bundle",
      domainPrefix: "bundle",
      http: { method, path, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "bundle-test" },
      requestId: randomUUID(),
      routeKey,
      stage: "$default",
      time: "",
      timeEpoch: Date.now(),
      authorizer: {
        iam: { accessKey: "AKIA", accountId: "000000000000", callerId: "AID", userArn, userId: "AID" },
      },
    },
  };
}

async function handlerOf(name) {
  const module = await import(bundles[name]);
  if (typeof module.handler !== "function") throw new Error(`${name}: the bundle exports no handler`);
  return module.handler;
}

function check(condition, step, detail) {
  if (!condition) {
    console.error(`FAIL ${step}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok   ${step}`);
}

const api = await handlerOf("api");
const internal = await handlerOf("internal");
const tick = await handlerOf("tick");
const sweeper = await handlerOf("sweeper");
const dispatcher = await handlerOf("dispatcher");
console.log(`node ${process.version}: 5 bundles loaded`);

const created = await api(
  httpEvent("POST /api/v1/jobs", TENANT, {
    body: { type: "bundle", runAt: new Date(Date.now() + 1_000).toISOString(), payload: { hello: "node22" } },
  }),
  context("api"),
);
const { jobId } = JSON.parse(created.body ?? "{}");
check(created.statusCode === 201 && typeof jobId === "string", "api: create a one-off job", created);

const ticked = await tick({}, context("tick"));
check(ticked && ticked.groups > 0, "tick: fan the sweep out", ticked);

// The sweeper gets the tick's messages as the SQS event source would hand them over.
const sqs = new SQSClient({
  region: "us-east-1",
  endpoint: process.env.SQS_ENDPOINT,
  credentials: { accessKeyId: "local", secretAccessKey: "local" },
});
/** The SQS event source's records for messages received from a queue. */
function recordsOf(messages, queue) {
  return messages.map((m) => ({
    messageId: m.MessageId,
    receiptHandle: m.ReceiptHandle,
    body: m.Body,
    attributes: { ApproximateReceiveCount: "1" },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${queue}`,
    awsRegion: "us-east-1",
  }));
}

/**
 * One round of an SQS event source: up to 10 messages received from `queueUrl`, handed to
 * `handler` as one event, and the records it did not report as failed deleted. Answers how
 * many came and the ids of those handed back.
 */
async function eventSourceRound(queueUrl, queue, handler, functionName, waitSeconds) {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: waitSeconds }),
  );
  if (Messages.length === 0) return { received: 0, failed: new Set(), result: undefined };
  const result = await handler({ Records: recordsOf(Messages, queue) }, context(functionName));
  const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  for (const m of Messages.filter((m) => !failed.has(m.MessageId))) {
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
  }
  return { received: Messages.length, failed, result };
}

/** Every sweep group's message handed to the sweeper, as the sweep queue's event source would. */
async function sweepAll() {
  let swept = 0;
  for (let round = 0; round < 20; round++) {
    const { received, failed, result } = await eventSourceRound(
      process.env.SWEEP_QUEUE_URL,
      "sweeps",
      sweeper,
      "sweeper",
      0,
    );
    if (received === 0) break;
    check(failed.size === 0, `sweeper: sweep ${received} groups`, result);
    swept += received;
  }
  check(swept > 0, "sweeper: every group swept", { swept });
}

await sweepAll();

let leases = [];
for (let attempt = 0; attempt < 10 && leases.length === 0; attempt++) {
  const answer = await internal(
    httpEvent("POST /internal/leases", WORKER, {
      body: { workerId: "bundle-test", types: ["bundle"], max: 1, waitSeconds: 2 },
    }),
    context("internal"),
  );
  check(answer.statusCode === 200, "internal: lease request answered", answer);
  leases = JSON.parse(answer.body ?? "[]");
}
const [lease] = leases;
check(
  lease?.jobId === jobId && lease.payload?.hello === "node22",
  "internal: the run leased with its payload",
  leases,
);

const completed = await internal(
  httpEvent("POST /internal/leases/{runId}/complete", WORKER, {
    pathParameters: { runId: lease.runId },
    body: { fence: lease.fence, result: "succeeded", final: lease.final },
  }),
  context("internal"),
);
check(
  completed.statusCode === 200 && JSON.parse(completed.body ?? "{}").status === "succeeded",
  "internal: the run completed",
  completed,
);

const job = await api(
  httpEvent("GET /api/v1/jobs/{jobId}", TENANT, { pathParameters: { jobId } }),
  context("api"),
);
const view = JSON.parse(job.body ?? "{}");
check(job.statusCode === 200 && view.status === "completed", "api: the job reads back completed", view);

// A push job: a webhook on a receiver here (the local settings allow private targets).
const received = [];
const server = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => {
    body += chunk;
  });
  request.on("end", () => {
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    received.push({ raw: body, body: parsed, headers: request.headers });
    response.writeHead(204).end();
  });
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const secret = await api(httpEvent("POST /api/v1/webhook-secret", TENANT), context("api"));
check(secret.statusCode === 201, "api: the tenant's webhook secret made", secret);
const secretKey = Buffer.from(
  String(JSON.parse(secret.body ?? "{}").secret ?? "").replace(/^whsec_/, ""),
  "base64",
);
/** Standard Webhooks: HMAC-SHA256 of `id.timestamp.body` under the secret, one of the `v1,` signatures. */
function signedWithSecret({ raw, headers }) {
  const expected = createHmac("sha256", secretKey)
    .update(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${raw}`)
    .digest("base64");
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .includes(`v1,${expected}`);
}
const pushCreated = await api(
  httpEvent("POST /api/v1/jobs", TENANT, {
    body: {
      runAt: new Date(Date.now() + 1_000).toISOString(),
      payload: { hello: "push" },
      target: { kind: "https", url: `http://127.0.0.1:${server.address().port}/hook` },
    },
  }),
  context("api"),
);
const pushJobId = JSON.parse(pushCreated.body ?? "{}").jobId;
check(pushCreated.statusCode === 201 && typeof pushJobId === "string", "api: create a push job", pushCreated);
const ticked2 = await tick({}, context("tick"));
check(ticked2 && ticked2.groups > 0, "tick: fan the sweep out again", ticked2);
await sweepAll();
const rounds = [];
for (let round = 0; round < 20 && received.length === 0; round++) {
  const handed = await eventSourceRound(process.env.PUSH_QUEUE_URL, "push", dispatcher, "dispatcher", 1);
  if (handed.received > 0) rounds.push({ messages: handed.received, returned: handed.failed.size });
}
server.close();
const [delivery] = received;
const delivered =
  received.length === 1 &&
  delivery.body?.jobId === pushJobId &&
  delivery.body.payload?.hello === "push" &&
  signedWithSecret(delivery);
// On a failure, say what the dispatcher was handed and where the run stands.
const runs = delivered
  ? undefined
  : await api(
      httpEvent("GET /api/v1/jobs/{jobId}/runs", TENANT, { pathParameters: { jobId: pushJobId } }),
      context("api"),
    );
check(delivered, "dispatcher: the push run delivered, signed with the tenant's secret, with its payload", {
  received,
  dispatcherRounds: rounds,
  runs: runs?.body,
});
const pushJob = await api(
  httpEvent("GET /api/v1/jobs/{jobId}", TENANT, { pathParameters: { jobId: pushJobId } }),
  context("api"),
);
const pushView = JSON.parse(pushJob.body ?? "{}");
check(
  pushJob.statusCode === 200 && pushView.status === "completed",
  "api: the push job reads back completed",
  pushView,
);
console.log("all bundles handled their events on", process.version);
