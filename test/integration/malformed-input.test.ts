import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createApiHandler } from "../../lambdas/handlers/api";
import type { HttpEvent } from "../../lambdas/handlers/http/request";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import { httpEvent, invoke, workerEvent } from "../support/http-event";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Thousands of generated malformed bodies, path parameters and query strings, sent to every
 * endpoint through the real handlers and DynamoDB: each gets a 4xx whose error names a field,
 * never a 5xx, and the table holds exactly what it held before.
 */
const RUNS_PER_ENDPOINT = 2_000;
let stack: TestStack;
let api: ReturnType<typeof createApiHandler>;
let internal: ReturnType<typeof createInternalHandler>;
let existingJobId: string;

const VALID_KEYS = new Set([
  "type",
  "payload",
  "idempotencyKey",
  "runAt",
  "cron",
  "timeZone",
  "interval",
  "startAt",
  "endAt",
  "missedRuns",
  "maxLateness",
  "maxAttempts",
  "retry",
  "leaseSeconds",
]);

async function snapshot(): Promise<string> {
  const { Items } = await stack.db.send(new ScanCommand({ TableName: stack.config.tableName }));
  return JSON.stringify((Items ?? []).map((i) => JSON.stringify(i)).sort());
}

beforeAll(async () => {
  stack = await createTestStack("malformed");
  api = createApiHandler(stack.deps);
  internal = createInternalHandler(stack.deps);
  const created = await invoke(
    api,
    httpEvent("POST /api/v1/jobs", {
      body: { type: "x", runAt: new Date(Date.now() + 3_600_000).toISOString() },
    }),
  );
  existingJobId = String(created.body.jobId);
});

const text = fc.string({ maxLength: 40 });
const notAnObject = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  text,
  fc.array(fc.anything(), { maxLength: 3 }),
);
const wrongType = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.object({ maxDepth: 1 }),
);
const future = () => new Date(Date.now() + 3_600_000).toISOString();

/** A valid create body with exactly one thing wrong with it. */
const badCreateBody = fc.oneof(
  fc
    .string({ minLength: 1, maxLength: 12 })
    .filter((k) => !VALID_KEYS.has(k))
    .map((k) => ({ type: "x", runAt: future(), [k]: 1 })),
  wrongType.map((type) => ({ type, runAt: future() })),
  text.map((t) => ({ type: ` ${t}`, runAt: future() })),
  text.map((t) => ({ type: "x", runAt: `x${t}` })),
  fc.constant({ type: "x" }),
  fc.constant({ runAt: future() }),
  fc.constant({ type: "x", runAt: future(), cron: "* * * * *" }),
  fc
    .array(fc.constantFrom("*", "5", "1-3", "*/2", "MON"), { minLength: 1, maxLength: 4 })
    .map((f) => ({ type: "x", cron: f.join(" ") })),
  fc
    .array(fc.constantFrom("*", "5"), { minLength: 6, maxLength: 7 })
    .map((f) => ({ type: "x", cron: f.join(" ") })),
  text.map((t) => ({ type: "x", cron: "0 9 * * *", timeZone: `Nowhere/${t}` })),
  fc
    .oneof(
      fc.integer({ max: 0 }),
      fc.integer({ min: 101 }),
      fc.double({ min: 1.1, max: 9.9, noInteger: true }),
    )
    .map((n) => ({ type: "x", runAt: future(), maxAttempts: n })),
  fc
    .oneof(fc.integer({ max: 4 }), fc.integer({ min: 43_201 }))
    .map((n) => ({ type: "x", runAt: future(), leaseSeconds: n })),
  text
    .filter((t) => !["catch-up", "run-once", "skip"].includes(t))
    .map((t) => ({ type: "x", runAt: future(), missedRuns: t })),
  text.map((t) => ({ type: "x", interval: { every: `every ${t}` } })),
  wrongType.map((p) => ({ type: "x", interval: p })),
  fc.constantFrom("P1M", "PT0S", "soon", -5, 0).map((d) => ({ type: "x", runAt: future(), maxLateness: d })),
  fc.constantFrom("P1Y", "nope").map((d) => ({ type: "x", runAt: future(), retry: { base: d } })),
  fc.constant({ type: "x", runAt: future(), retry: { base: 60, cap: 10 } }),
  fc.constant({ type: "x", runAt: new Date(Date.now() - 3_600_000).toISOString() }),
  fc.constant({ type: "x", cron: "0 9 * * *", endAt: new Date(Date.now() - 3_600_000).toISOString() }),
  wrongType.map((k) => ({ type: "x", runAt: future(), idempotencyKey: k })),
);

/** Path segments that are not job ids of this tenant. */
const badJobId = fc.oneof(
  text.filter((t) => t.length > 0 && !t.includes("/")),
  fc.constant("j_00000000000000000000"),
);
const badPageQuery = fc.oneof(
  fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 101 })).map((n) => ({ limit: String(n) })),
  text.map((t) => ({ limit: `x${t}` })),
  text.map((t) => ({ cursor: `!${t}` })),
  fc
    .string({ minLength: 1, maxLength: 8 })
    .filter((k) => !["limit", "cursor", "status", "type"].includes(k))
    .map((k) => ({ [k]: "1" })),
  fc
    .base64String({ minLength: 4, maxLength: 40 })
    .map((c) => ({ cursor: Buffer.from(`{"pk":"${c}"}`).toString("base64url") })),
);

type Case = { handler: "api" | "internal"; event: HttpEvent };
const raw = (routeKey: string, rawBody: string, pathParameters?: Record<string, string>): HttpEvent =>
  httpEvent(routeKey, { rawBody, pathParameters });

const ENDPOINTS: Record<string, fc.Arbitrary<Case>> = {
  "POST /api/v1/jobs": fc.oneof(
    badCreateBody.map((body) => ({
      handler: "api" as const,
      event: httpEvent("POST /api/v1/jobs", { body }),
    })),
    notAnObject.map((body) => ({ handler: "api" as const, event: httpEvent("POST /api/v1/jobs", { body }) })),
    text.map((t) => ({ handler: "api" as const, event: raw("POST /api/v1/jobs", `{${t}`) })),
  ),
  "GET /api/v1/jobs": fc
    .oneof(
      badPageQuery,
      text
        .filter((t) => !["active", "paused", "cancelled", "completed"].includes(t))
        .map((t) => ({ status: t })),
      text.map((t) => ({ type: ` ${t}` })),
    )
    .map((q) => {
      const event = httpEvent("GET /api/v1/jobs");
      event.queryStringParameters = q;
      return { handler: "api" as const, event };
    }),
  "GET /api/v1/jobs/{jobId}": badJobId.map((jobId) => ({
    handler: "api" as const,
    event: httpEvent("GET /api/v1/jobs/{jobId}", { pathParameters: { jobId } }),
  })),
  "DELETE /api/v1/jobs/{jobId}": badJobId.map((jobId) => ({
    handler: "api" as const,
    event: httpEvent("DELETE /api/v1/jobs/{jobId}", { pathParameters: { jobId } }),
  })),
  "POST /api/v1/jobs/{jobId}/pause": badJobId.map((jobId) => ({
    handler: "api" as const,
    event: httpEvent("POST /api/v1/jobs/{jobId}/pause", { pathParameters: { jobId } }),
  })),
  "POST /api/v1/jobs/{jobId}/resume": badJobId.map((jobId) => ({
    handler: "api" as const,
    event: httpEvent("POST /api/v1/jobs/{jobId}/resume", { pathParameters: { jobId } }),
  })),
  "GET /api/v1/jobs/{jobId}/runs": fc
    .oneof(
      badJobId.map((jobId) => ({ jobId, query: {} as Record<string, string> })),
      badPageQuery.map((query) => ({ jobId: "EXISTING", query })),
    )
    .map(({ jobId, query }) => {
      const event = httpEvent("GET /api/v1/jobs/{jobId}/runs", {
        pathParameters: { jobId: jobId === "EXISTING" ? existingJobId : jobId },
      });
      event.queryStringParameters = query;
      return { handler: "api" as const, event };
    }),
  "GET /api/v1/schedules/preview": fc
    .oneof(
      text.map((t) => ({ cron: `${t} x` })),
      text.map((t) => ({ cron: "0 9 * * *", timeZone: `Nowhere/${t}` })),
      fc
        .oneof(fc.integer({ max: 0 }), fc.integer({ min: 101 }))
        .map((n) => ({ cron: "0 9 * * *", count: String(n) })),
      text.map((t) => ({ interval: `every ${t}` })),
      text.map((t) => ({ runAt: `x${t}` })),
      fc.constant({}),
      fc
        .string({ minLength: 1, maxLength: 8 })
        .filter(
          (k) => !["cron", "timeZone", "interval", "runAt", "startAt", "endAt", "from", "count"].includes(k),
        )
        .map((k) => ({ cron: "0 9 * * *", [k]: "1" })),
    )
    .map((q) => {
      const event = httpEvent("GET /api/v1/schedules/preview");
      event.queryStringParameters = q;
      return { handler: "api" as const, event };
    }),
  "POST /internal/leases": fc
    .oneof(
      notAnObject,
      fc.constant({ workerId: "w", types: [] }),
      wrongType.map((types) => ({ workerId: "w", types })),
      fc
        .oneof(fc.integer({ max: 0 }), fc.integer({ min: 101 }))
        .map((max) => ({ workerId: "w", types: ["x"], max })),
      fc.integer({ min: 21 }).map((waitSeconds) => ({ workerId: "w", types: ["x"], waitSeconds })),
      fc
        .string({ minLength: 1, maxLength: 8 })
        .filter((k) => !["workerId", "types", "max", "waitSeconds"].includes(k))
        .map((k) => ({ workerId: "w", types: ["x"], [k]: 1 })),
    )
    .map((body) => ({ handler: "internal" as const, event: workerEvent("POST /internal/leases", { body }) })),
  "POST /internal/leases/{runId}/complete": fc
    .oneof(
      text.map((runId) => ({ runId: runId || "r", body: { fence: 1, result: "succeeded" } as unknown })),
      fc
        .oneof(
          notAnObject,
          wrongType.map((fence) => ({ fence, result: "succeeded" })),
          text.map((result) => ({ fence: 1, result: `${result}!` })),
        )
        .map((body) => ({ runId: "r_0123456789abcdefghjk_1", body })),
    )
    .map(({ runId, body }) => ({
      handler: "internal" as const,
      event: workerEvent("POST /internal/leases/{runId}/complete", { pathParameters: { runId }, body }),
    })),
};

describe("malformed input, generated", () => {
  it(`answers ${RUNS_PER_ENDPOINT} bad requests per endpoint with a 4xx naming a field, and changes nothing`, async () => {
    const before = await snapshot();
    for (const [endpoint, arbitrary] of Object.entries(ENDPOINTS)) {
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ handler, event }) => {
          const { status, body } = await invoke(handler === "api" ? api : internal, event);
          expect(status, `${endpoint}: ${JSON.stringify(body)}`).toBeGreaterThanOrEqual(400);
          expect(status, `${endpoint}: ${JSON.stringify(body)}`).toBeLessThan(500);
          expect(
            body.error?.field,
            `${endpoint}: ${JSON.stringify(body)} for ${event.body ?? JSON.stringify(event.queryStringParameters ?? event.pathParameters)}`,
          ).toEqual(expect.any(String));
        }),
        { numRuns: RUNS_PER_ENDPOINT },
      );
    }
    expect(await snapshot()).toBe(before);
  }, 180_000);
});
