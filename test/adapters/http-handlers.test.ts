import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { createSchedulerDeps } from "../../lambdas/adapters/scheduler-deps";
import { createApiHandler } from "../../lambdas/handlers/api";
import { tenantOfPrincipal } from "../../lambdas/handlers/http/request";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import {
  httpEvent,
  invoke,
  MOCKED_AWS_CONFIG,
  TEST_TENANT_ARN,
  TEST_WORKER_ARN,
  workerEvent,
} from "../support/http-event";

const db = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const deps = createSchedulerDeps(MOCKED_AWS_CONFIG);
const api = createApiHandler(deps);
const internal = createInternalHandler(deps);
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** A job item as DynamoDB would hand it back. */
function storedJob(overrides: Record<string, unknown> = {}) {
  return {
    jobId: "j_0123456789abcdefghjk",
    tenant: "arn:aws:iam::111122223333:role/tenant-a",
    type: "x",
    payload: null,
    schedule: { kind: "once", runAt: 1 },
    status: "active",
    missedRuns: "run-once",
    maxAttempts: 5,
    retry: { baseMs: 10_000, capMs: 3_600_000 },
    leaseSeconds: 30,
    requestHash: "h",
    createdAt: 1,
    createdBy: "p",
    updatedAt: 1,
    audit: [],
    ...overrides,
  };
}

beforeEach(() => {
  db.reset();
  sqs.reset();
});

describe("POST /api/v1/jobs", () => {
  it("answers 201 with the job id and next run once the put succeeded", async () => {
    db.on(PutCommand).resolves({});
    const { status, body } = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "send-invoice", runAt: inAnHour() } }),
    );
    expect(status).toBe(201);
    expect(body.jobId).toMatch(/^j_/);
    expect(db).toHaveReceivedCommandWith(PutCommand, {
      Item: expect.objectContaining({ tenant: "arn:aws:iam::111122223333:role/tenant-a" }),
    });
  });

  it("answers 400 naming the field for bad input, and writes nothing", async () => {
    const { status, body } = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "x", runAt: "tomorrow" } }),
    );
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: "ValidationError", field: "runAt" });
    expect(db).not.toHaveReceivedCommand(PutCommand);
  });

  it("answers 400 for a body that is not JSON", async () => {
    const { status, body } = await invoke(api, httpEvent("POST /api/v1/jobs", { rawBody: "{oops" }));
    expect(status).toBe(400);
    expect(body.error?.field).toBe("body");
  });

  it("answers 409 when an idempotency key is reused with another body", async () => {
    db.on(PutCommand).rejects(new ConditionalCheckFailedException({ message: "exists", $metadata: {} }));
    db.on(GetCommand).resolves({ Item: storedJob({ requestHash: "a different request" }) });
    const { status, body } = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "x", runAt: inAnHour(), idempotencyKey: "k" } }),
    );
    expect(status).toBe(409);
    expect(body.error?.code).toBe("IdempotencyConflict");
  });

  it("answers a generic 500 when DynamoDB fails, leaking no detail", async () => {
    db.on(PutCommand).rejects(new Error("secret internal detail"));
    const { status, body } = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "x", runAt: inAnHour() } }),
    );
    expect(status).toBe(500);
    expect(JSON.stringify(body)).not.toContain("secret");
  });

  it("answers 403 to a request without an IAM identity", async () => {
    const { status } = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "x", runAt: inAnHour() }, userArn: null }),
    );
    expect(status).toBe(403);
  });

  it("fires a near-term job itself: one SQS batch with the run", async () => {
    db.on(PutCommand).resolves({});
    db.on(UpdateCommand).resolves({});
    sqs.on(SendMessageBatchCommand).resolves({ Failed: [] });
    // Its tenant's lane is created on first use, from the template queue's attributes.
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: { VisibilityTimeout: "30" } });
    sqs.on(CreateQueueCommand).resolves({ QueueUrl: "https://sqs.local/runs-lane" });
    const soon = new Date(Date.now() + 2_000).toISOString();
    const { status } = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "x", runAt: soon } }),
    );
    expect(status).toBe(201);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 1);
    expect(sqs).toHaveReceivedCommandWith(SendMessageBatchCommand, {
      QueueUrl: "https://sqs.local/runs-lane",
    });
  });
});

describe("GET /api/v1/jobs/{jobId}", () => {
  const stored = storedJob({ tenant: "arn:aws:iam::111122223333:role/tenant-b" });

  it("answers 404 for another tenant's job, exactly as for a missing one", async () => {
    db.on(GetCommand).resolves({ Item: stored });
    db.on(QueryCommand).resolves({ Items: [] });
    const other = await invoke(
      api,
      httpEvent("GET /api/v1/jobs/{jobId}", { pathParameters: { jobId: stored.jobId } }),
    );
    db.on(GetCommand).resolves({});
    const missing = await invoke(
      api,
      httpEvent("GET /api/v1/jobs/{jobId}", { pathParameters: { jobId: stored.jobId } }),
    );
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
  });

  it("shows the owner its job", async () => {
    db.on(GetCommand).resolves({ Item: stored });
    db.on(QueryCommand).resolves({ Items: [] });
    const { status, body } = await invoke(
      api,
      httpEvent("GET /api/v1/jobs/{jobId}", {
        pathParameters: { jobId: stored.jobId },
        userArn: "arn:aws:sts::111122223333:assumed-role/tenant-b/session-7",
      }),
    );
    expect(status).toBe(200);
    expect(body).toMatchObject({ jobId: stored.jobId, status: "active", runs: [] });
  });
});

describe("internal routes", () => {
  it("answers 409 to a completion with a stale fence", async () => {
    db.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: "no", $metadata: {} }));
    db.on(GetCommand).resolves({
      Item: {
        runId: "r_0123456789abcdefghjk_1000",
        jobId: "j_0123456789abcdefghjk",
        tenant: TEST_TENANT_ARN,
        type: "x",
        scheduledFor: 1000,
        status: "leased",
        attempt: 2,
        fence: 2,
        createdAt: 1,
      },
    });
    const { status, body } = await invoke(
      internal,
      workerEvent("POST /internal/leases/{runId}/complete", {
        pathParameters: { runId: "r_0123456789abcdefghjk_1000" },
        body: { fence: 1, result: "succeeded" },
      }),
    );
    expect(status).toBe(409);
    expect(body.error?.code).toBe("StaleFence");
  });

  it("writes a completion only on the condition that the run is one of the worker's tenants'", async () => {
    db.on(UpdateCommand).resolves({ Attributes: { receiptHandle: undefined, final: false } });
    const { status } = await invoke(
      internal,
      workerEvent("POST /internal/leases/{runId}/complete", {
        pathParameters: { runId: "r_0123456789abcdefghjk_1000" },
        // The SDK echoes the lease's `final`: no read before the write.
        body: { fence: 1, result: "succeeded", final: false },
      }),
    );
    expect(db.commandCalls(GetCommand)).toHaveLength(0);
    expect(status).toBe(200);
    const update = db.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(update?.ConditionExpression).toMatch(/ AND tenant IN \(:tenant0\)$/);
    expect(update?.ExpressionAttributeValues).toMatchObject({ ":tenant0": TEST_TENANT_ARN });
  });

  it("refuses every /internal/* route to a principal with no worker binding, tenants included (403), touching nothing", async () => {
    const routes = [
      ["POST /internal/leases", undefined, { workerId: "w", types: ["x"] }],
      ["POST /internal/leases/{runId}/heartbeat", { runId: "r_0123456789abcdefghjk_1000" }, { fence: 1 }],
      [
        "POST /internal/leases/{runId}/complete",
        { runId: "r_0123456789abcdefghjk_1000" },
        { fence: 1, result: "failed", retryable: false },
      ],
    ] as const;
    for (const userArn of [
      TEST_TENANT_ARN,
      "arn:aws:sts::111122223333:assumed-role/tenant-a/s-1",
      "arn:aws:iam::111122223333:role/someone-else",
    ]) {
      for (const [routeKey, pathParameters, body] of routes) {
        const { status, body: answer } = await invoke(
          internal,
          httpEvent(routeKey, { ...(pathParameters ? { pathParameters } : {}), body, userArn }),
        );
        expect(status, `${userArn} ${routeKey}`).toBe(403);
        expect(answer.error?.code).toBe("Forbidden");
      }
    }
    expect(db.calls()).toHaveLength(0);
    expect(sqs.calls()).toHaveLength(0);
  });

  it("knows a bound worker role's sessions as that worker", async () => {
    db.on(GetCommand).resolves({});
    const session = TEST_WORKER_ARN.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/");
    const { status } = await invoke(
      internal,
      httpEvent("POST /internal/leases/{runId}/heartbeat", {
        pathParameters: { runId: "r_0123456789abcdefghjk_1000" },
        body: { fence: 1 },
        userArn: `${session}/task-7`,
      }),
    );
    expect(status).toBe(404); // past the binding check: the run does not exist
  });

  it("answers 404 for a route the function does not serve", async () => {
    const { status } = await invoke(internal, workerEvent("GET /internal/nothing"));
    expect(status).toBe(404);
  });
});

describe("tenant of a principal", () => {
  it("drops the session name of an assumed role and keeps other principals as they are", () => {
    expect(tenantOfPrincipal("arn:aws:sts::111122223333:assumed-role/Billing/session-42")).toBe(
      "arn:aws:iam::111122223333:role/Billing",
    );
    expect(tenantOfPrincipal("arn:aws:iam::111122223333:user/alice")).toBe(
      "arn:aws:iam::111122223333:user/alice",
    );
  });
});
