import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ROUTES, routeKeyOf } from "../../lambdas/definitions/routes";
import { JOBS_TABLE } from "../../lambdas/definitions/table";
import type { HttpEvent } from "../../lambdas/handlers/http/request";
import {
  attributeSize,
  isUtf8,
  itemProblems,
  itemSize,
  MAX_NESTING_LEVELS,
  updatedItem,
  writeProblems,
} from "../support/dynamo-rules";
import {
  containerDepth,
  filledTo,
  jsonBytes,
  nextDown,
  payloadAtDepth,
  scalar,
  validNumber,
} from "../support/edge-payloads";
import { placeholderProblems } from "../support/expression-rules";
import { httpEvent, lambdaContext, TEST_TENANT_ARN, TEST_WORKER_ARN } from "../support/http-event";
import {
  accepted,
  api,
  created,
  deadRun,
  internal,
  JOB_ID,
  problemsOf,
  RUN_ID,
  recorded,
  refused,
  type send,
  storedAt,
  storedJob,
  storedRun,
  stubAws,
} from "../support/mocked-scheduler";
import { applyUpdate } from "../support/update-expression";

/**
 * Hostile input, generated: every route gets at least 5,000 requests built from the classes of
 * input that broke the API before (numbers past 2^53 and past DynamoDB's range, nesting
 * thousands of levels deep, lone surrogates in values and keys, empty and huge keys, payloads
 * whose DynamoDB size passes their JSON size, durations of a billion days, cursors that are
 * almost a key, bodies that are not UTF-8 or not JSON), mixed into otherwise valid requests.
 * DynamoDB and SQS are mocks that record every write. For each request: no 5xx; a refused
 * request (4xx) wrote nothing; and every write of an accepted one is valid under DynamoDB's
 * rules, as test/support/dynamo-rules.ts implements them on the marshalled items (an update
 * applied to the item it changes), apart from the code under test.
 */

// ---- DynamoDB's rules: test/support/dynamo-rules.ts, independent of the code ----

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
    roleArn: fc.oneof(fc.constant("arn:aws:iam::111122223333:role/jobsched-target-r"), hostileString),
  }),
  fc.record({
    kind: fc.constant("sqs"),
    queueUrl: fc.oneof(
      fc.constantFrom("https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo", "http://127.0.0.1/q"),
      hostileString,
    ),
    roleArn: fc.oneof(fc.constant("arn:aws:iam::111122223333:role/jobsched-target-r"), hostileString),
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
  "POST /api/v1/jobs/batch": {
    body: bodyFor(
      fc.record(
        {
          jobs: fc.array(fc.oneof(createBody, nearlyValidCreate, nearlyValidPush, hostileValue), {
            minLength: 0,
            maxLength: 4,
          }),
          idempotencyKey: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), hostileValue),
        },
        { requiredKeys: ["jobs"] },
      ),
    ),
  },
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
  "POST /internal/lanes": {
    body: bodyFor(
      fc.record(
        {
          workerId: fc.oneof(fc.constant("w1"), hostileString),
          types: fc.oneof(fc.constant(["x"]), fc.array(hostileValue, { maxLength: 3 })),
          gone: fc.oneof(
            fc.array(fc.oneof(hostileString, fc.constant("https://sqs.local/1/runs_x")), { maxLength: 3 }),
            hostileValue,
          ),
        },
        { requiredKeys: [] },
      ),
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
            recorded.writes = [];
            recorded.queries = [];
            recorded.lastError = undefined;
            const result = (await handler(event, lambdaContext)) as { statusCode: number; body: string };
            statuses.set(result.statusCode, (statuses.get(result.statusCode) ?? 0) + 1);
            expect(result.statusCode, JSON.stringify(recorded.lastError)).toBeLessThan(500);
            if (routeKey === "POST /api/v1/jobs/batch" && result.statusCode === 200) {
              // A bulk create answers 200 with a result per item: no item may have crashed either.
              const { results } = JSON.parse(result.body) as { results: Array<{ status: number }> };
              for (const item of results) expect(item.status, result.body).toBeLessThan(500);
            }
            if (result.statusCode >= 400) {
              expect(
                recorded.writes.map((w) => w.call),
                result.body,
              ).toEqual([]);
              const error = (JSON.parse(result.body) as { error?: { message?: string } }).error;
              expect(error?.message, "a refusal says what is wrong").toMatch(/\S/);
            }
            for (const query of recorded.queries) {
              expect(
                [...startKeyProblems(query), ...placeholderProblems(query)],
                JSON.stringify(query),
              ).toEqual([]);
            }
            for (const write of recorded.writes) {
              expect(problemsOf(write), write.call).toEqual([]);
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
      // Valid by DynamoDB's rules (dynamo-rules.ts; the payload is a top-level attribute), and JSON's own.
      .filter(({ payload }) => itemProblems({ payload }).length === 0 && !Object.is(payload, -0));
    let tried = 0;
    await fc.assert(
      fc.asyncProperty(accepted, async ({ payload, cron, idempotencyKey }) => {
        const body = cron
          ? { type: "send-invoice", cron: "*/5 * * * *", timeZone: "Europe/London", payload, idempotencyKey }
          : { type: "send-invoice", runAt: validRunAt(), payload, idempotencyKey };
        recorded.writes = [];
        const event = httpEvent("POST /api/v1/jobs", {
          rawBody: JSON.stringify(body),
          userArn: TEST_TENANT_ARN,
        });
        const result = (await api(event, lambdaContext)) as { statusCode: number; body: string };
        expect(result.statusCode, result.body).toBe(201);
        for (const write of recorded.writes) {
          expect(problemsOf(write), write.call).toEqual([]);
        }
        tried += 1;
      }),
      { numRuns: 1_000, seed: 20261201 },
    );
    expect(tried).toBe(1_000);
  }, 120_000);
});

// ---- The edges themselves: the largest, deepest and most extreme bodies the API promises ----

/** The API's promise: a payload of at most 256 KiB, as JSON and as DynamoDB sizes it. */
const PAYLOAD_LIMIT = 256 * 1024;
/** DynamoDB nests 32 levels, the payload attribute the first and a scalar in its deepest map the last. */
const PAYLOAD_DEPTH = MAX_NESTING_LEVELS - 1;
/** 20 labels (the API's most), keys and values as long as it takes. */
const maxLabels = (value: string) =>
  Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${i}`.padStart(64, "k"), value.repeat(128)]));

const patchRoute = (body: unknown) => ["PATCH /api/v1/jobs/{jobId}", body, { jobId: JOB_ID }] as const;

describe("valid input at the edges: accepted, every write valid; one step past: refused", () => {
  it(`payloads nested ${PAYLOAD_DEPTH} levels deep, in random shapes, are stored (create and update); one level more is refused`, async () => {
    stubAws(storedRun);
    await fc.assert(
      fc.asyncProperty(payloadAtDepth(PAYLOAD_DEPTH), fc.boolean(), async (payload, patch) => {
        expect(containerDepth(payload)).toBe(PAYLOAD_DEPTH);
        const { job } = patch
          ? await accepted(200, ...patchRoute({ payload }))
          : await accepted(201, "POST /api/v1/jobs", created(payload));
        expect(containerDepth(job?.payload)).toBe(PAYLOAD_DEPTH);
      }),
      { numRuns: 300, seed: 20261201 },
    );
    await fc.assert(
      fc.asyncProperty(payloadAtDepth(PAYLOAD_DEPTH + 1), fc.boolean(), async (payload, patch) => {
        if (patch) await refused("payload", ...patchRoute({ payload }));
        else await refused("payload", "POST /api/v1/jobs", created(payload));
      }),
      { numRuns: 100, seed: 20261201 },
    );
  }, 120_000);

  it("payloads of exactly 256 KiB (as JSON, as DynamoDB sizes it, or both), random content, are stored; a byte more is refused", async () => {
    stubAws(storedRun);
    const content = fc.record({
      base: fc.record(
        {
          deep: payloadAtDepth(PAYLOAD_DEPTH - 1),
          rest: fc.dictionary(fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }), scalar, {
            maxKeys: 20,
          }),
        },
        { requiredKeys: ["rest"] },
      ),
      // DynamoDB's size less the JSON's: 0, both at the limit; over 0, DynamoDB's; under, the JSON's.
      gap: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: -20_000, max: -1 }),
      ),
      filler: fc.constantFrom("x", "é", "€", "😀", "ǅ"),
      patch: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(content, async ({ base, gap, filler, patch }) => {
        const request = (payload: unknown): Parameters<typeof send> =>
          patch ? [...patchRoute({ payload })] : ["POST /api/v1/jobs", created(payload)];
        const payload = filledTo(base, PAYLOAD_LIMIT, gap, filler);
        const [json, dynamo] = [jsonBytes(payload), attributeSize(payload)];
        expect([json, dynamo, Math.max(json, dynamo)]).toEqual([
          gap <= 0 ? PAYLOAD_LIMIT : expect.any(Number),
          gap >= 0 ? PAYLOAD_LIMIT : expect.any(Number),
          PAYLOAD_LIMIT,
        ]);
        const { job } = await accepted(patch ? 200 : 201, ...request(payload));
        expect(attributeSize(job?.payload)).toBe(dynamo);
        await refused("payload", ...request(filledTo(base, PAYLOAD_LIMIT + 1, gap, filler)));
      }),
      { numRuns: 60, seed: 20261201 },
    );
  }, 120_000);

  it("numbers at the ends of the API's range (JSON doubles, 1E-130 to 2^53 - 1) are stored; a step past is refused", async () => {
    stubAws(storedRun);
    const body = (text: string) =>
      `{"type":"send-invoice","cron":"*/5 * * * *","payload":{"n":${text},"list":[1,${text}]}}`;
    const edges = [
      ...[Number.MAX_SAFE_INTEGER, 1e-130, 2 ** 52 - 0.5, 0.1 + 0.2, Number.EPSILON, 1.234567890123456e-130]
        .flatMap((n) => [n, -n])
        .map(String),
      // As a client may write them: JSON.parse rounds them into the range.
      ...[
        "0",
        "-0",
        "1E-130",
        "-1.0e-130",
        "9007199254740991.4",
        "0.1000000000000000000000000000000000000000001",
      ],
      ...["100000000000000000000000000000000000000000e-171", "1e15", "4.9e-130"],
    ];
    for (const text of edges) {
      const { job } = await accepted(201, "POST /api/v1/jobs", body(text));
      expect(job?.payload, text).toEqual({ n: JSON.parse(text), list: [1, JSON.parse(text)] });
    }
    const past = [
      ...["9007199254740992", "9007199254740991.5", String(nextDown(1e-130)), "1e-131", "5e-324"],
      // DynamoDB's own ends, past the API's, and JavaScript's.
      ...["9.9999999999999999999999999999999999999E+125", "1E+126", "1.7976931348623157e308", "1e999"],
    ];
    for (const text of past.flatMap((t) => [t, `-${t}`]))
      await refused("payload", "POST /api/v1/jobs", body(text));
    await fc.assert(
      fc.asyncProperty(fc.array(validNumber, { minLength: 1, maxLength: 40 }), async (numbers) => {
        await accepted(201, "POST /api/v1/jobs", created(numbers));
      }),
      { numRuns: 300, seed: 20261201 },
    );
  }, 120_000);

  it("other fields at their limits are accepted; one past is refused naming the field", async () => {
    stubAws(storedRun);
    const edges: Array<[field: string, edge: unknown, past: unknown]> = [
      ["type", "t".repeat(128), "t".repeat(129)],
      ["idempotencyKey", "k".repeat(256), "k".repeat(257)],
      ["labels", maxLabels("v"), { ...maxLabels("v"), one: "more" }],
      ["leaseSeconds", 42_600, 42_601],
      ["leaseSeconds", 5, 4],
      ["maxAttempts", 100, 101],
      ["maxAttempts", 1, 0],
      ["maxLateness", 366 * 86_400, 366 * 86_400 + 1],
    ];
    for (const [field, edge, past] of edges) {
      await accepted(201, "POST /api/v1/jobs", { ...created({ a: 1 }), [field]: edge });
      await refused(field, "POST /api/v1/jobs", { ...created({ a: 1 }), [field]: past });
    }
  });
});

// ---- Updates: the item a write leaves, over the largest job the API can store ----

/** IAM's longest principal: a user with a 512-character path and a 64-character name. */
const LONG_PRINCIPAL = `arn:aws:iam::111122223333:user/${"p".repeat(510)}/${"u".repeat(64)}`;
/** The largest job the API leaves: payload and labels at their limits, 50 audit entries of the longest. */
const biggestJob = {
  ...storedJob,
  payload: filledTo({}, PAYLOAD_LIMIT, 0),
  labels: maxLabels("a"),
  audit: Array.from({ length: 50 }, (_, at) =>
    at % 2 === 0
      ? { action: "paused", by: LONG_PRINCIPAL, at, reason: "€".repeat(256) }
      : { action: "updated", by: LONG_PRINCIPAL, at, fields: ["payload", "target", ...FIELDS] },
  ),
};

describe("updates: the item each write leaves is within DynamoDB's rules", () => {
  it("PATCH of a 256 KiB payload and 20 labels over the largest job: the job written is within 400 KB", async () => {
    stubAws(storedRun, biggestJob);
    const payload = filledTo({ other: "content" }, PAYLOAD_LIMIT, 0, "€");
    const { job } = await accepted(200, ...patchRoute({ payload, labels: maxLabels("b") }));
    // A replace (a conditional PutItem): checked whole, above. It is near the edge:
    expect(itemSize(job ?? {})).toBeGreaterThan(PAYLOAD_LIMIT + 50 * 1_000);
  });

  it("completing the last run of the largest job: the job item the update leaves is within 400 KB", async () => {
    stubAws({ ...storedRun, final: true }, biggestJob);
    const { writes: done } = await accepted(
      200,
      "POST /internal/leases/{runId}/complete",
      { fence: 1, result: "succeeded", final: true },
      { runId: RUN_ID },
    );
    const update = done.find(
      (w) => w.call === "UpdateItem" && (w.input as { Key: { sk: string } }).Key.sk === "JOB",
    );
    expect(update, "the job is marked completed in place").toBeDefined();
    const { item } = updatedItem(update?.input as Record<string, unknown>, storedAt);
    expect(item.status).toBe("completed");
    expect(itemSize(item)).toBeGreaterThan(PAYLOAD_LIMIT + 50 * 1_000);
  });

  it("the checks catch writes DynamoDB refuses: an item over 400 KB, too deep, a key changed, a bad expression", () => {
    const stored = { pk: "p", sk: "s", big: "x".repeat(300_000), n: 1, types: new Set(["a"]) };
    const update = (UpdateExpression: string, values: Record<string, unknown> = {}, names?: object) =>
      writeProblems(
        "UpdateItem",
        {
          Key: { pk: "p", sk: "s" },
          UpdateExpression,
          ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
          ...(names ? { ExpressionAttributeNames: names } : {}),
        },
        () => stored,
      );
    const over = [expect.stringMatching(/over 400 KB/)];
    const more = "y".repeat(120_000);
    expect(update("SET more = :v", { ":v": more })).toEqual(over);
    expect(update("SET copy = big")).toEqual(over);
    expect(update("SET copy = if_not_exists(copy, big)")).toEqual(over);
    expect(update("SET l = list_append(if_not_exists(l, :e), :v)", { ":e": [], ":v": [more] })).toEqual(over);
    expect(update("ADD #t :s", { ":s": new Set([more]) }, { "#t": "types" })).toEqual(over);
    // Removed list elements are named by their indexes in the item as it was.
    const removed = applyUpdate(
      { pk: "p", sk: "s", l: ["a", "b", "c", "d"] },
      { Key: { pk: "p", sk: "s" }, UpdateExpression: "REMOVE l[1], l[2]" },
      ["pk", "sk"],
    );
    expect(removed.item.l).toEqual(["a", "d"]);
    // What the adapters write: within the rules.
    expect(update("SET more = :v REMOVE big", { ":v": more })).toEqual([]);
    expect(
      update("SET n = n + :one ADD #t :s", { ":one": 1, ":s": new Set(["b"]) }, { "#t": "types" }),
    ).toEqual([]);
    expect(
      update(
        "DELETE #t :s ADD fresh :minusOne",
        { ":s": new Set(["a"]), ":minusOne": -1 },
        { "#t": "types" },
      ),
    ).toEqual([]);
    expect(update("SET d = :v", { ":v": nested(MAX_NESTING_LEVELS, 1, true) })).toEqual([
      "nested more than 32 levels",
    ]);
    expect(update("SET sk = :v", { ":v": "t" })).toEqual(["sk: a key attribute cannot be updated"]);
    expect(update("SET a = :v REMOVE a", { ":v": 1 })).toEqual(["a and a: two document paths overlap"]);
    expect(update("SET a = missing")).toEqual([
      "missing: the expression reads an attribute that does not exist",
    ]);
    expect(update("SET a.b = :v", { ":v": 1 })).toEqual([
      "a.b: the document path is not valid for this item",
    ]);
    expect(update("ADD big :one", { ":one": 1 })).toEqual([
      "big: ADD takes a number to a number, or a set to a set",
    ]);
    expect(update("SET a = :v,", { ":v": 1 })).toEqual(["UpdateExpression: the expression ends early"]);
  });
});

/** JSON text of a generated value; values JSON cannot express go as their nearest text. */
function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return "null";
  }
}
