import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createSchedulerDeps } from "../../lambdas/adapters/scheduler-deps";
import { ROUTES, routeKeyOf } from "../../lambdas/definitions/routes";
import { JOBS_TABLE } from "../../lambdas/definitions/table";
import { createApiHandler } from "../../lambdas/handlers/api";
import type { HttpEvent } from "../../lambdas/handlers/http/request";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import { placeholderProblems } from "../support/expression-rules";
import {
  httpEvent,
  lambdaContext,
  MOCKED_AWS_CONFIG,
  TEST_TENANT_ARN,
  TEST_WORKER_ARN,
} from "../support/http-event";

/**
 * Hostile input, generated: every route gets at least 5,000 requests built from the classes of
 * input that broke the API before (numbers past 2^53 and past DynamoDB's range, nesting
 * thousands of levels deep, lone surrogates in values and keys, empty and huge keys, payloads
 * whose DynamoDB size passes their JSON size, durations of a billion days, cursors that are
 * almost a key, bodies that are not UTF-8 or not JSON), mixed into otherwise valid requests.
 * DynamoDB and SQS are mocks that record every write. For each request: no 5xx; a refused
 * request (4xx) wrote nothing; and every write of an accepted one is valid under DynamoDB's
 * rules, as this file implements them on the marshalled items, apart from the code under test.
 */

const db = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
/** The last error a handler logged: shown with a 5xx, so a failure names its cause. */
let lastError: unknown;
const realDeps = createSchedulerDeps(MOCKED_AWS_CONFIG);
const deps = {
  ...realDeps,
  log: {
    info: () => undefined,
    warn: () => undefined,
    error: (_message: string, extra?: Record<string, unknown>) => {
      lastError = extra?.error;
    },
  },
};
const api = createApiHandler(deps);
const internal = createInternalHandler(deps);

const JOB_ID = "j_0123456789abcdefghjk";
const RUN_ID = `r_0123456789abcdefghjk_${Date.UTC(2026, 0, 1)}`;
const storedJob = {
  pk: `JOB#${JOB_ID}`,
  sk: "JOB",
  jobId: JOB_ID,
  tenant: TEST_TENANT_ARN,
  jobTenant: TEST_TENANT_ARN,
  type: "x",
  payload: { hello: "world" },
  schedule: { kind: "cron", cron: "*/5 * * * *", timeZone: "UTC" },
  status: "active",
  nextRunAt: Date.UTC(2030, 0, 1),
  missedRuns: "run-once",
  maxAttempts: 5,
  retry: { baseMs: 10_000, capMs: 3_600_000 },
  leaseSeconds: 30,
  requestHash: "h",
  createdAt: 1,
  createdBy: TEST_TENANT_ARN,
  updatedAt: 1,
  audit: [],
};
const storedRun = {
  pk: `JOB#${JOB_ID}`,
  sk: `RUN#${String(Date.UTC(2026, 0, 1)).padStart(16, "0")}`,
  runId: RUN_ID,
  jobId: JOB_ID,
  tenant: TEST_TENANT_ARN,
  type: "x",
  scheduledFor: Date.UTC(2026, 0, 1),
  status: "leased",
  attempt: 1,
  fence: 1,
  createdAt: 1,
  leaseExpiresAt: Date.UTC(2030, 0, 1),
};

/** Every query, recorded per request: a start key from a caller's cursor must be a whole key. */
let queries: Array<Record<string, unknown>> = [];
/** Every call that changes state, recorded per request. */
let writes: Array<{ readonly call: string; readonly input: unknown }> = [];
const record =
  (call: string, answer: (input: Record<string, unknown>) => unknown = () => ({})) =>
  (input: Record<string, unknown>) => {
    writes.push({ call, input });
    return answer(input);
  };

/** A dead-lettered run, for the replay route. */
const deadRun = {
  ...storedRun,
  status: "dead-lettered",
  deadTenant: TEST_TENANT_ARN,
  finishedAt: 2,
  error: "boom",
  final: true,
};

function stubAws(run: Record<string, unknown>) {
  db.reset();
  sqs.reset();
  db.on(GetCommand).callsFake((input: { Key: { pk: string; sk: string } }) => {
    // The tenant has a webhook secret: https targets are accepted, a POST rotates it.
    if (input.Key.pk.startsWith("WEBHOOK#")) {
      return {
        Item: { ...input.Key, current: `whsec_${Buffer.alloc(32, 1).toString("base64")}`, createdAt: 1 },
      };
    }
    if (input.Key.pk !== storedJob.pk) return {};
    return { Item: input.Key.sk === "JOB" ? storedJob : run };
  });
  db.on(QueryCommand).callsFake((input: Record<string, unknown>) => {
    queries.push(input);
    return { Items: [] };
  });
  db.on(ScanCommand).resolves({ Items: [] });
  db.on(BatchGetCommand).resolves({ Responses: { jobs: [storedJob] } });
  db.on(PutCommand).callsFake(record("PutItem"));
  db.on(UpdateCommand).callsFake(
    record("UpdateItem", (input) => ({
      Attributes: (input.Key as { sk: string }).sk === "JOB" ? storedJob : storedRun,
    })),
  );
  db.on(DeleteCommand).callsFake(record("DeleteItem"));
  db.on(TransactWriteCommand).callsFake(record("TransactWriteItems"));
  db.on(BatchWriteCommand).callsFake(record("BatchWriteItem"));
  const allSent = (input: Record<string, unknown>) => ({
    Successful: ((input.Entries as Array<{ Id: string }>) ?? []).map((e) => ({
      Id: e.Id,
      MessageId: "m",
      MD5OfMessageBody: "",
    })),
    Failed: [],
  });
  sqs.on(SendMessageBatchCommand).callsFake(record("SendMessageBatch", allSent));
  sqs.on(SendMessageCommand).callsFake(record("SendMessage", () => ({ MessageId: "m" })));
  sqs.on(DeleteMessageCommand).callsFake(record("DeleteMessage"));
  sqs.on(DeleteMessageBatchCommand).callsFake(record("DeleteMessageBatch", allSent));
  sqs.on(ChangeMessageVisibilityBatchCommand).callsFake(record("ChangeMessageVisibilityBatch", allSent));
  sqs.on(CreateQueueCommand).callsFake(record("CreateQueue", () => ({ QueueUrl: "https://sqs.local/lane" })));
  sqs.on(SetQueueAttributesCommand).callsFake(record("SetQueueAttributes"));
  sqs.on(GetQueueUrlCommand).resolves({ QueueUrl: "https://sqs.local/lane" });
  sqs.on(GetQueueAttributesCommand).resolves({ Attributes: { QueueArn: "arn:aws:sqs:us-east-1:1:lane" } });
  sqs.on(ReceiveMessageCommand).resolves({ Messages: [] });
}

// ---- DynamoDB's rules, implemented here on marshalled items (independent of the code) ----

const isUtf8 = (text: string) => Buffer.from(text, "utf8").toString("utf8") === text;

function numberProblem(text: string): string | undefined {
  const match = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return `N ${text} is not a number`;
  // value = digits x 10^exponent, digits without leading or trailing zeros
  let digits = `${match[1]}${match[2] ?? ""}`.replace(/^0+/, "");
  let exponent = Number(match[3] ?? 0) - (match[2] ?? "").length;
  while (digits.endsWith("0")) {
    digits = digits.slice(0, -1);
    exponent += 1;
  }
  if (digits === "") return undefined; // zero
  if (digits.length > 38) return `N ${text} has more than 38 significant digits`;
  const order = exponent + digits.length - 1; // the power of ten of the leading digit
  if (order > 125) return `N ${text} is 1E+126 or more`;
  if (order < -130) return `N ${text} is under 1E-130`;
  return undefined;
}

/** Problems of one attribute value at `level` (a top-level attribute is level 1). */
function valueProblems(value: AttributeValue, level: number): string[] {
  if (level > 32) return ["nested more than 32 levels"];
  if (value.S !== undefined) return isUtf8(value.S) ? [] : ["S is not valid UTF-8"];
  if (value.N !== undefined) {
    const problem = numberProblem(value.N);
    return problem ? [problem] : [];
  }
  if (value.L !== undefined) return value.L.flatMap((v) => valueProblems(v, level + 1));
  if (value.M !== undefined) {
    return Object.entries(value.M).flatMap(([name, v]) => [
      ...(name === "" ? ["empty attribute name"] : []),
      ...(isUtf8(name) ? [] : ["attribute name is not valid UTF-8"]),
      ...(Buffer.byteLength(name, "utf8") >= 65_536 ? ["attribute name of 64 KB or more"] : []),
      ...valueProblems(v, level + 1),
    ]);
  }
  return [];
}

/** DynamoDB's item size: names and values, lists and maps 3 bytes plus 1 per element. */
function sizeOf(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, "utf8");
  if (value.N !== undefined) {
    const digits = value.N.replace(/^-/, "")
      .replace(/[eE].*$/, "")
      .replace(".", "");
    return Math.ceil(digits.replace(/^0+/, "").replace(/0+$/, "").length / 2) + 1;
  }
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + sizeOf(v), 0);
  if (value.M !== undefined) {
    return (
      3 + Object.entries(value.M).reduce((s, [n, v]) => s + 1 + Buffer.byteLength(n, "utf8") + sizeOf(v), 0)
    );
  }
  return 1;
}

function itemProblems(item: Record<string, unknown>): string[] {
  let marshalled: Record<string, AttributeValue>;
  try {
    marshalled = marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: false });
  } catch (error) {
    return [`the SDK cannot marshal it: ${String(error)}`];
  }
  const problems = Object.entries(marshalled).flatMap(([name, value]) => [
    ...(name === "" ? ["empty attribute name"] : []),
    ...valueProblems(value, 1),
  ]);
  const size = Object.entries(marshalled).reduce(
    (s, [n, v]) => s + Buffer.byteLength(n, "utf8") + sizeOf(v),
    0,
  );
  if (size > 400 * 1024) problems.push(`item of ${size} bytes, over 400 KB`);
  return problems;
}

/** What DynamoDB would refuse in one recorded write. */
function writeProblems(call: string, input: Record<string, unknown>): string[] {
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const fromValues = [
    ...(Object.keys(values).length > 0 ? itemProblems(values) : []),
    ...placeholderProblems(input),
  ];
  if (call === "PutItem") return [...itemProblems(input.Item as Record<string, unknown>), ...fromValues];
  if (call === "UpdateItem" || call === "DeleteItem") return fromValues;
  if (call === "TransactWriteItems") {
    return (input.TransactItems as Array<Record<string, Record<string, unknown>>>).flatMap((entry) =>
      Object.entries(entry).flatMap(([kind, action]) =>
        writeProblems(kind === "Put" ? "PutItem" : "UpdateItem", action as Record<string, unknown>),
      ),
    );
  }
  if (call === "BatchWriteItem") {
    const requests = Object.values(
      input.RequestItems as Record<string, Array<Record<string, { Item?: object }>>>,
    );
    return requests
      .flat()
      .flatMap((r) => (r.PutRequest?.Item ? itemProblems(r.PutRequest.Item as Record<string, unknown>) : []));
  }
  return []; // SQS: the bodies are our own JSON
}

/** DynamoDB refuses an ExclusiveStartKey that is not exactly a key of the table or index queried. */
function startKeyProblems(query: Record<string, unknown>): string[] {
  const start = query.ExclusiveStartKey as Record<string, unknown> | undefined;
  if (start === undefined) return [];
  const index = JOBS_TABLE.indexes.find((i) => i.name === query.IndexName);
  const keys = [
    JOBS_TABLE.partitionKey,
    JOBS_TABLE.sortKey,
    ...(index ? [index.partitionKey, index.sortKey] : []),
  ];
  const problems = Object.keys(start)
    .filter((name) => !keys.some((k) => k.name === name))
    .map((name) => `start key has ${name}, not a key attribute`);
  for (const key of keys) {
    const value = start[key.name];
    const ok =
      key.type === "S"
        ? typeof value === "string" && value !== "" && isUtf8(value)
        : Number.isSafeInteger(value);
    if (!ok) problems.push(`start key's ${key.name} is ${JSON.stringify(value)}`);
  }
  return problems;
}

// ---- Hostile values ----

const nested = (depth: number, leaf: unknown, asList: boolean): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asList ? [value] : { k: value };
  return value;
};
const LONE = ["\ud800", "\udfff", "a\udc00b", "\ud83d"];
const hostileNumber = fc.constantFrom(
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53) - 2,
  1e20,
  1e126,
  1e300,
  -1e300,
  1e-131,
  1e-200,
  5e-324,
  Number.MAX_VALUE,
  -0,
  0.1 + 0.2,
  123456789.12345679,
);
const hostileString = fc.oneof(
  fc.constantFrom(...LONE, "", "\u0000", "x".repeat(70_000), "ǅ\u{1F600}", "../../etc", "%00", "JOB#j_x"),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({
    unit: fc.integer({ min: 0xd700, max: 0xe000 }).map((c) => String.fromCharCode(c)),
    maxLength: 6,
  }),
);
const hostileKeyObject = fc.oneof(
  fc.constantFrom<unknown>(
    { "": 1 },
    { a: { "": "x" } },
    { ["k".repeat(70_000)]: 1 },
    { __proto__: { x: 1 } },
  ),
  fc.constantFrom(...LONE).map((s) => ({ [s]: 1 })),
  fc.constantFrom(...LONE).map((s) => ({ ok: [{ [`k${s}`]: true }] })),
);
/** Payloads whose DynamoDB size passes their JSON size: lists of small elements. */
const blowup = fc.constantFrom<unknown>(
  Array.from({ length: 120_000 }, () => 1),
  Array.from({ length: 80_000 }, () => []),
  Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [i.toString(36), 0])),
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileKeyObject },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.integer({ min: 25, max: 40 }), fc.oneof(hostileNumber, fc.constant("leaf")), fc.boolean())
      .map(([d, leaf, list]) => nested(d, leaf, list)),
  },
  { weight: 2, arbitrary: fc.array(hostileNumber, { maxLength: 3 }) },
);
const hostileDuration = fc.oneof(
  fc.constantFrom<unknown>(
    "P1000000000D",
    "PT0S",
    "P99999999999999999999D",
    "-PT1M",
    "PT0.5S",
    "P1Y",
    "P2W",
    "PT",
  ),
  fc.constantFrom<unknown>(1e20, 0, -5, 1.5, 366 * 86_400 + 1),
  hostileValue,
);

const validRunAt = () => new Date(Date.now() + 3_600_000).toISOString();
/** Push targets: valid ones, private and malformed destinations, hostile fields. */
const pushTarget = fc.oneof(
  fc.record({
    kind: fc.constant("https"),
    url: fc.oneof(
      fc.constantFrom(
        "https://hooks.example.com/a",
        "https://10.0.0.1/",
        "https://[::ffff:127.0.0.1]/",
        "http://hooks.example.com/",
        "https://localhost/",
        "not a url",
        `https://hooks.example.com/${"a".repeat(3000)}`,
      ),
      hostileString,
    ),
    timeoutSeconds: fc.oneof(fc.constant(10), hostileValue),
    concurrency: fc.oneof(fc.constant(5), hostileValue),
  }),
  fc.record({
    kind: fc.constant("lambda"),
    functionArn: fc.oneof(
      fc.constant("arn:aws:lambda:us-east-1:123456789012:function:f:live"),
      hostileString,
    ),
    roleArn: fc.oneof(fc.constant("arn:aws:iam::123456789012:role/r"), hostileString),
  }),
  fc.record({
    kind: fc.constant("sqs"),
    queueUrl: fc.oneof(
      fc.constantFrom("https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo", "http://127.0.0.1/q"),
      hostileString,
    ),
    roleArn: fc.oneof(fc.constant("arn:aws:iam::123456789012:role/r"), hostileString),
  }),
  fc.record({ kind: hostileValue }),
);
/** A create-job body: valid fields, each of them sometimes replaced by something hostile. */
const createBody = fc
  .record(
    {
      type: fc.oneof(fc.constant("send-invoice"), hostileValue),
      payload: fc.oneof({ weight: 12, arbitrary: hostileValue }, { weight: 1, arbitrary: blowup }),
      runAt: fc.oneof(
        fc.constant("now"),
        fc.constantFrom("2026-13-45T99:00:00Z", "+275760-09-13T00:00:00Z"),
        hostileValue,
      ),
      cron: fc.oneof(fc.constantFrom("*/5 * * * *", "0 9 * * 7", "* * * * * * * *"), hostileString),
      timeZone: fc.oneof(fc.constantFrom("Europe/London", "Mars/Olympus"), hostileString),
      interval: fc.oneof(
        fc.record({ every: fc.oneof(fc.constantFrom("15m", "P1000000000D"), hostileString) }),
        hostileValue,
      ),
      maxLateness: hostileDuration,
      retry: fc.oneof(fc.record({ base: hostileDuration, cap: hostileDuration }), hostileValue),
      leaseSeconds: fc.oneof(fc.constant(30), hostileValue),
      maxAttempts: fc.oneof(fc.constant(3), hostileValue),
      idempotencyKey: fc.oneof(fc.constant("key-1"), hostileString),
      missedRuns: fc.oneof(fc.constant("skip"), hostileValue),
      dstPolicy: fc.oneof(fc.constantFrom("every-occurrence", "skip-gap"), hostileValue),
      overlapPolicy: fc.oneof(fc.constantFrom("skip", "buffer-one", "cancel-previous"), hostileValue),
      delivery: fc.oneof(fc.constantFrom("at-most-once", "at-least-once"), hostileValue),
      labels: fc.oneof(
        fc.constant({ team: "billing", env: "prod" }),
        fc.dictionary(hostileString, hostileString),
        hostileValue,
      ),
      jitter: fc.oneof(fc.constantFrom("PT5M", "P2D", 3600), hostileDuration),
      target: fc.oneof(pushTarget, hostileValue),
    },
    { requiredKeys: ["type"] },
  )
  .map((body) => {
    const fields: Record<string, unknown> = { ...body };
    if (fields.runAt === "now") fields.runAt = validRunAt();
    // Mostly one schedule, as a valid request has: the others are dropped.
    if (fields.runAt !== undefined) {
      delete fields.cron;
      delete fields.interval;
    } else if (fields.cron !== undefined) delete fields.interval;
    return fields;
  });

/** A valid create (one-off, some due within the lead so the API fires them) with one field hostile. */
const FIELDS = [
  "type",
  "runAt",
  "cron",
  "timeZone",
  "interval",
  "maxLateness",
  "retry",
  "leaseSeconds",
  "maxAttempts",
  "idempotencyKey",
  "missedRuns",
  "overlapPolicy",
  "delivery",
  "labels",
  "dstPolicy",
  "jitter",
  "startAt",
  "endAt",
];
/** A valid push create (no type, a target) with its target or one of its fields hostile. */
const nearlyValidPush = fc
  .record({ target: pushTarget, soon: fc.boolean(), payload: hostileValue })
  .map(({ target, soon, payload }) => ({
    target,
    runAt: new Date(Date.now() + (soon ? 1_000 : 3_600_000)).toISOString(),
    payload,
  }));
const nearlyValidCreate = fc
  .record({
    payload: fc.oneof({ weight: 12, arbitrary: hostileValue }, { weight: 1, arbitrary: blowup }),
    soon: fc.boolean(),
    cron: fc.boolean(),
    override: fc.option(fc.tuple(fc.constantFrom(...FIELDS), fc.oneof(hostileValue, hostileDuration)), {
      freq: 2,
    }),
  })
  .map(({ payload, soon, cron, override }) => {
    const body: Record<string, unknown> = cron
      ? { type: "send-invoice", cron: "*/5 * * * *", timeZone: "Europe/London", payload }
      : {
          type: "send-invoice",
          runAt: new Date(Date.now() + (soon ? 1_000 : 3_600_000)).toISOString(),
          payload,
        };
    if (override) body[override[0]] = override[1];
    return body;
  });

/** A patch: a few of the job's fields, valid, cleared (null) or hostile. */
const patchBody = fc.record(
  {
    payload: fc.oneof({ weight: 8, arbitrary: hostileValue }, { weight: 1, arbitrary: blowup }),
    cron: fc.oneof(fc.constantFrom("0 9 * * 1-5", "0 9 * * 7"), hostileString),
    timeZone: fc.oneof(fc.constantFrom("Europe/London", null), hostileValue),
    dstPolicy: fc.oneof(fc.constantFrom("every-occurrence", null), hostileValue),
    interval: fc.oneof(fc.record({ every: fc.constantFrom("15m", "P1000000000D") }), hostileValue),
    runAt: fc.oneof(fc.constant("2030-06-01T09:00:00Z"), hostileValue),
    jitter: fc.oneof(fc.constantFrom("PT5M", null), hostileDuration),
    startAt: fc.oneof(fc.constantFrom("2029-01-01T00:00:00Z", null), hostileValue),
    endAt: fc.oneof(fc.constantFrom("2031-01-01T00:00:00Z", null), hostileValue),
    maxLateness: fc.oneof(fc.constant(null), hostileDuration),
    retry: fc.oneof(
      fc.record({ base: hostileDuration, cap: hostileDuration }),
      fc.constant(null),
      hostileValue,
    ),
    leaseSeconds: fc.oneof(fc.constantFrom(60, null), hostileValue),
    labels: fc.oneof(fc.constantFrom({ team: "search" }, { team: null }, null), hostileValue),
  },
  { requiredKeys: [] },
);
/** Patches that are valid, and one field hostile, as a client nearly sends them. */
const nearlyValidPatch = fc
  .tuple(
    fc.constantFrom<Record<string, unknown>>(
      { cron: "0 9 * * 1-5", timeZone: "Europe/London" },
      { dstPolicy: "skip-gap", jitter: "PT1M" },
      { interval: { every: "1h" } },
      { maxLateness: null, retry: null },
      { leaseSeconds: 120 },
    ),
    fc.option(fc.tuple(fc.constantFrom("payload", "type", "endAt", "timeZone", "jitter"), hostileValue), {
      freq: 2,
    }),
  )
  .map(([valid, override]) => (override ? { ...valid, [override[0]]: override[1] } : valid));

/** A body for any route: a hostile value, a body of the route's own fields with hostile values, or bytes. */
function bodyFor(
  fields: fc.Arbitrary<Record<string, unknown>>,
): fc.Arbitrary<{ body?: unknown; raw?: string; base64?: string }> {
  return fc.oneof(
    { weight: 5, arbitrary: fields.map((body) => ({ body })) },
    { weight: 2, arbitrary: hostileValue.map((body) => ({ body })) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            "{",
            "[".repeat(5000) + "]".repeat(5000),
            `{"a":${"[".repeat(100_000)}`,
            "null",
            '"\\ud800"',
            "1e999",
          ),
          fc
            .integer({ min: 33, max: 6_000 })
            .map((d) => `{"type":"x","runAt":"${validRunAt()}","payload":${"[".repeat(d)}${"]".repeat(d)}}`),
        )
        .map((raw) => ({ raw })),
    },
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({
        base64: Buffer.concat([Buffer.from('{"type":"'), Buffer.from(bytes), Buffer.from('"}')]).toString(
          "base64",
        ),
      })),
    },
  );
}

const workerBody = fc.record(
  {
    workerId: fc.oneof(fc.constant("w1"), hostileString),
    types: fc.oneof(fc.constant(["x"]), fc.array(hostileValue, { maxLength: 3 })),
    max: fc.oneof(fc.constant(5), hostileValue),
    // A positive wait would long-poll the mocked queue in real time: hostile, but slow.
    waitSeconds: fc.oneof(
      fc.constant(0),
      hostileValue.filter((v) => !(Number.isInteger(v) && (v as number) > 0)),
    ),
  },
  { requiredKeys: ["waitSeconds"] }, // absent, it defaults to a 1 s long poll
);
const completionItem = fc.record(
  {
    runId: fc.oneof(fc.constant(RUN_ID), hostileString),
    fence: fc.oneof(fc.constant(1), hostileValue),
    result: fc.oneof(fc.constantFrom("succeeded", "failed"), hostileValue),
    error: fc.oneof(fc.constant("boom"), hostileString, hostileValue),
    retryable: fc.oneof(fc.boolean(), hostileValue),
  },
  { requiredKeys: [] },
);
const heartbeatItem = fc.record(
  { runId: fc.oneof(fc.constant(RUN_ID), hostileString), fence: fc.oneof(fc.constant(1), hostileValue) },
  { requiredKeys: [] },
);
const emptyBody = fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), hostileString), hostileValue, {
  maxKeys: 3,
});

/** Cursors: garbage, and JSON keys that are almost right (the caller's tenant, parts missing). */
const cursor = fc.oneof(
  hostileString,
  fc
    .oneof(
      fc.constant<Record<string, unknown>>({ jobTenant: TEST_TENANT_ARN }),
      fc.constant<Record<string, unknown>>({ jobTenant: TEST_TENANT_ARN, createdAt: 5 }),
      fc.constant<Record<string, unknown>>({ jobTenant: TEST_TENANT_ARN, createdAt: 5, pk: "JOB#x" }),
      fc.constant<Record<string, unknown>>({
        deadTenant: TEST_TENANT_ARN,
        finishedAt: 1,
        pk: "",
        sk: "RUN#1",
      }),
      fc.constant<Record<string, unknown>>({ pk: `JOB#${JOB_ID}`, sk: "RUN#\ud800" }),
      fc.constant<Record<string, unknown>>({ pk: `JOB#${JOB_ID}`, sk: "RUN#1", extra: 1 }),
      fc.constant<Record<string, unknown>>({
        jobTenant: TEST_TENANT_ARN,
        createdAt: 1e300,
        pk: "JOB#x",
        sk: "JOB",
      }),
      fc.dictionary(
        fc.constantFrom("pk", "sk", "jobTenant", "createdAt", "deadTenant", "finishedAt"),
        hostileValue,
      ),
    )
    .map((key) => Buffer.from(JSON.stringify(key), "utf8").toString("base64url")),
);
const query = fc.dictionary(
  fc.oneof(
    fc.constantFrom(
      "limit",
      "cursor",
      "status",
      "type",
      "label",
      "cron",
      "timeZone",
      "count",
      "from",
      "every",
    ),
    hostileString,
  ),
  fc.oneof(
    cursor,
    hostileString,
    fc.constantFrom(
      "0",
      "-1",
      "1e9",
      "25",
      "active",
      "NaN",
      "9007199254740993",
      "team=a",
      "team=a,env=b",
      "a=b=c",
    ),
  ),
  { maxKeys: 4 },
);
/** Preview queries: valid ones with a hostile field mixed in, and hostile ones. */
const previewQuery = fc.oneof(
  query,
  fc
    .tuple(
      fc.constantFrom(
        { cron: "0 9 * * *", timeZone: "Europe/London" },
        { interval: "15m" },
        { runAt: "2030-01-01T00:00:00Z" },
      ),
      fc.option(
        fc.tuple(
          fc.constantFrom("cron", "timeZone", "interval", "runAt", "startAt", "endAt", "count"),
          hostileString,
        ),
      ),
    )
    .map(
      ([valid, override]) =>
        (override ? { ...valid, [override[0]]: override[1] } : valid) as unknown as Record<string, string>,
    ),
);
const pathId = (known: string) =>
  fc.oneof(
    fc.constant(known),
    hostileString.filter((s) => s !== ""),
  );

interface Shape {
  readonly body?: fc.Arbitrary<{ body?: unknown; raw?: string; base64?: string }>;
  readonly path?: fc.Arbitrary<Record<string, string>>;
  readonly query?: fc.Arbitrary<Record<string, string>>;
}
const SHAPES: Record<string, Shape> = {
  "POST /api/v1/jobs": { body: bodyFor(fc.oneof(createBody, nearlyValidCreate, nearlyValidPush)) },
  "GET /api/v1/jobs": { query },
  "GET /api/v1/jobs/{jobId}": { path: pathId(JOB_ID).map((jobId) => ({ jobId })) },
  "PATCH /api/v1/jobs/{jobId}": {
    path: pathId(JOB_ID).map((jobId) => ({ jobId })),
    body: bodyFor(fc.oneof(patchBody, nearlyValidPatch)),
  },
  "DELETE /api/v1/jobs/{jobId}": {
    path: pathId(JOB_ID).map((jobId) => ({ jobId })),
    body: bodyFor(emptyBody),
  },
  "GET /api/v1/jobs/{jobId}/runs": { path: pathId(JOB_ID).map((jobId) => ({ jobId })), query },
  "POST /api/v1/jobs/{jobId}/pause": {
    path: pathId(JOB_ID).map((jobId) => ({ jobId })),
    body: bodyFor(
      fc.oneof(emptyBody, fc.record({ reason: fc.oneof(hostileString, fc.string({ maxLength: 300 })) })),
    ),
  },
  "POST /api/v1/jobs/{jobId}/resume": {
    path: pathId(JOB_ID).map((jobId) => ({ jobId })),
    body: bodyFor(emptyBody),
  },
  "POST /api/v1/jobs/{jobId}/trigger": {
    path: pathId(JOB_ID).map((jobId) => ({ jobId })),
    body: bodyFor(emptyBody),
  },
  "POST /api/v1/jobs/{jobId}/backfill": {
    path: pathId(JOB_ID).map((jobId) => ({ jobId })),
    body: bodyFor(
      fc.record(
        {
          from: fc.oneof(fc.constantFrom("2026-01-01T00:00:00Z", "2026-01-01T00:10:00+01:00"), hostileValue),
          to: fc.oneof(
            fc.constantFrom("2026-01-01T00:30:00Z", "2025-12-31T00:00:00Z", "2999-01-01T00:00:00Z"),
            hostileValue,
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  "GET /api/v1/schedules/preview": { query: previewQuery },
  "GET /api/v1/openapi.json": { query },
  "GET /api/v1/dead-letters": { query },
  "POST /api/v1/dead-letters/replay": { body: bodyFor(emptyBody) },
  "POST /api/v1/dead-letters/{runId}/replay": {
    path: pathId(RUN_ID).map((runId) => ({ runId })),
    body: bodyFor(emptyBody),
  },
  "POST /api/v1/webhook-secret": { body: bodyFor(emptyBody) },
  "GET /api/v1/webhook-secret": { query },
  "POST /internal/leases": { body: bodyFor(workerBody) },
  "POST /internal/leases/{runId}/heartbeat": {
    path: pathId(RUN_ID).map((runId) => ({ runId })),
    body: bodyFor(heartbeatItem),
  },
  "POST /internal/leases/{runId}/complete": {
    path: pathId(RUN_ID).map((runId) => ({ runId })),
    body: bodyFor(completionItem),
  },
  "POST /internal/completions": {
    body: bodyFor(
      fc.record({ completions: fc.oneof(fc.array(completionItem, { maxLength: 4 }), hostileValue) }),
    ),
  },
  "POST /internal/heartbeats": {
    body: bodyFor(
      fc.record({ heartbeats: fc.oneof(fc.array(heartbeatItem, { maxLength: 4 }), hostileValue) }),
    ),
  },
};

const RUNS_PER_ROUTE = 5_000;

describe("hostile input, generated, on every route", () => {
  it("covers every route", () => {
    expect(Object.keys(SHAPES).sort()).toEqual(ROUTES.map(routeKeyOf).sort());
  });

  for (const route of ROUTES) {
    const routeKey = routeKeyOf(route);
    const shape = SHAPES[routeKey] as Shape;
    it(`${routeKey}: no 5xx, nothing written when refused, every write and start key valid for DynamoDB`, async () => {
      stubAws(routeKey.includes("{runId}/replay") ? deadRun : storedRun);
      const handler = route.function === "api" ? api : internal;
      const principal = route.function === "api" ? TEST_TENANT_ARN : TEST_WORKER_ARN;
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(
          shape.body ?? fc.constant<{ body?: unknown; raw?: string; base64?: string }>({}),
          shape.path ?? fc.constant(undefined),
          shape.query ?? fc.constant(undefined),
          async (body, pathParameters, queryStringParameters) => {
            const event: HttpEvent = httpEvent(routeKey, {
              ...(body.body === undefined ? {} : { rawBody: safeStringify(body.body) }),
              ...(body.raw === undefined ? {} : { rawBody: body.raw }),
              ...(pathParameters === undefined ? {} : { pathParameters }),
              userArn: principal,
            });
            if (body.base64 !== undefined) {
              event.body = body.base64;
              event.isBase64Encoded = true;
            }
            if (queryStringParameters !== undefined) event.queryStringParameters = queryStringParameters;
            writes = [];
            queries = [];
            lastError = undefined;
            const result = (await handler(event, lambdaContext)) as { statusCode: number; body: string };
            statuses.set(result.statusCode, (statuses.get(result.statusCode) ?? 0) + 1);
            expect(result.statusCode, JSON.stringify(lastError)).toBeLessThan(500);
            if (result.statusCode >= 400) {
              expect(
                writes.map((w) => w.call),
                result.body,
              ).toEqual([]);
              const error = (JSON.parse(result.body) as { error?: { message?: string } }).error;
              expect(error?.message, "a refusal says what is wrong").toMatch(/\S/);
            }
            for (const query of queries) {
              expect(
                [...startKeyProblems(query), ...placeholderProblems(query)],
                JSON.stringify(query),
              ).toEqual([]);
            }
            for (const write of writes) {
              expect(writeProblems(write.call, write.input as Record<string, unknown>), write.call).toEqual(
                [],
              );
            }
          },
        ),
        { numRuns: RUNS_PER_ROUTE, seed: 20261201, endOnFailure: true },
      );
      // The generator reaches past the edge too: some requests are accepted.
      expect(
        [...statuses.keys()].some((status) => status < 300),
        JSON.stringify([...statuses]),
      ).toBe(true);
    }, 120_000);
  }
});

describe("valid input, generated: accepted", () => {
  it("POST /api/v1/jobs: every body whose payload DynamoDB's rules (implemented here) would store is 201", async () => {
    stubAws(storedRun);
    const accepted = fc
      .record({
        payload: fc.jsonValue({ maxDepth: 6 }),
        cron: fc.boolean(),
        idempotencyKey: fc.option(fc.string({ minLength: 1, maxLength: 64 }), { nil: undefined }),
      })
      // Valid by the rules above (the payload is stored as a top-level attribute), and JSON's own.
      .filter(({ payload }) => itemProblems({ payload }).length === 0 && !Object.is(payload, -0));
    let tried = 0;
    await fc.assert(
      fc.asyncProperty(accepted, async ({ payload, cron, idempotencyKey }) => {
        const body = cron
          ? { type: "send-invoice", cron: "*/5 * * * *", timeZone: "Europe/London", payload, idempotencyKey }
          : { type: "send-invoice", runAt: validRunAt(), payload, idempotencyKey };
        writes = [];
        const event = httpEvent("POST /api/v1/jobs", {
          rawBody: JSON.stringify(body),
          userArn: TEST_TENANT_ARN,
        });
        const result = (await api(event, lambdaContext)) as { statusCode: number; body: string };
        expect(result.statusCode, result.body).toBe(201);
        for (const write of writes) {
          expect(writeProblems(write.call, write.input as Record<string, unknown>), write.call).toEqual([]);
        }
        tried += 1;
      }),
      { numRuns: 1_000, seed: 20261201 },
    );
    expect(tried).toBe(1_000);
  }, 120_000);
});

/** JSON text of a generated value; values JSON cannot express go as their nearest text. */
function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return "null";
  }
}
