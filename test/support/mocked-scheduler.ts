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
import { mockClient } from "aws-sdk-client-mock";
import { expect } from "vitest";
import { createSchedulerDeps } from "../../lambdas/adapters/scheduler-deps";
import { createApiHandler } from "../../lambdas/handlers/api";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import { updatedItem, writeProblems } from "./dynamo-rules";
import { httpEvent, lambdaContext, MOCKED_AWS_CONFIG, TEST_TENANT_ARN, TEST_WORKER_ARN } from "./http-event";

/**
 * The API and internal handlers over mocked DynamoDB and SQS that record every write (for
 * test/adapters/hostile-input.test.ts): the table holds one job and, under any other sort key
 * of its partition, one run; an update answers the item as stored (ALL_OLD) or with the update
 * applied (ALL_NEW, by update-expression.ts).
 */

/** What one request did, reset by each test's request. */
export const recorded = {
  /** Every call that changes state. */
  writes: [] as Array<{ readonly call: string; readonly input: unknown }>,
  /** Every query: a start key from a caller's cursor must be a whole key. */
  queries: [] as Array<Record<string, unknown>>,
  /** The last error a handler logged: shown with a 5xx, so a failure names its cause. */
  lastError: undefined as unknown,
};

const db = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const realDeps = createSchedulerDeps(MOCKED_AWS_CONFIG);
const deps = {
  ...realDeps,
  log: {
    info: () => undefined,
    warn: () => undefined,
    error: (_message: string, extra?: Record<string, unknown>) => {
      recorded.lastError = extra?.error;
    },
  },
};
export const api = createApiHandler(deps);
export const internal = createInternalHandler(deps);

export const JOB_ID = "j_0123456789abcdefghjk";
export const RUN_ID = `r_0123456789abcdefghjk_${Date.UTC(2026, 0, 1)}`;
export const storedJob = {
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
export const storedRun = {
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

const record =
  (call: string, answer: (input: Record<string, unknown>) => unknown = () => ({})) =>
  (input: Record<string, unknown>) => {
    recorded.writes.push({ call, input });
    return answer(input);
  };

/** A dead-lettered run, for the replay route. */
export const deadRun = {
  ...storedRun,
  status: "dead-lettered",
  deadTenant: TEST_TENANT_ARN,
  finishedAt: 2,
  error: "boom",
  final: true,
};

/** What the mocked table holds: the job, and under any other sort key of its partition, a run. */
let table: { job: Record<string, unknown>; run: Record<string, unknown> } = {
  job: storedJob,
  run: storedRun,
};
/** The item stored under a key: what a read answers, and what an update applies to. */
export function storedAt(key: Record<string, unknown>): Record<string, unknown> | undefined {
  // The tenant has a webhook secret: https targets are accepted, a POST rotates it.
  if (String(key.pk).startsWith("WEBHOOK#")) {
    return { ...key, current: `whsec_${Buffer.alloc(32, 1).toString("base64")}`, createdAt: 1 };
  }
  if (key.pk !== table.job.pk) return undefined;
  return key.sk === "JOB" ? table.job : table.run;
}
/** The problems of a recorded write, updates applied to what the table holds. */
export const problemsOf = (write: { readonly call: string; readonly input: unknown }) =>
  writeProblems(write.call, write.input as Record<string, unknown>, storedAt);

export function stubAws(run: Record<string, unknown>, job: Record<string, unknown> = storedJob) {
  db.reset();
  sqs.reset();
  table = { job, run };
  db.on(GetCommand).callsFake((input: { Key: Record<string, unknown> }) => ({ Item: storedAt(input.Key) }));
  db.on(QueryCommand).callsFake((input: Record<string, unknown>) => {
    recorded.queries.push(input);
    return { Items: [] };
  });
  db.on(ScanCommand).resolves({ Items: [] });
  db.on(BatchGetCommand).callsFake(() => ({ Responses: { jobs: [table.job] } }));
  db.on(PutCommand).callsFake(record("PutItem"));
  // ALL_OLD: the item as stored; ALL_NEW: the update applied to it (test/support/update-expression.ts).
  db.on(UpdateCommand).callsFake(
    record("UpdateItem", (input) => {
      const key = input.Key as Record<string, unknown>;
      const stored = storedAt(key) ?? storedRun;
      return {
        Attributes:
          input.ReturnValues === "ALL_NEW" ? updatedItem(input, () => stored).item : { ...stored, ...key },
      };
    }),
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

/** Sends one request; its status, its error when refused, and the writes it made. */
export async function send(routeKey: string, body: unknown, pathParameters?: Record<string, string>) {
  const worker = routeKey.startsWith("POST /internal/");
  recorded.writes = [];
  recorded.lastError = undefined;
  const event = httpEvent(routeKey, {
    rawBody: typeof body === "string" ? body : JSON.stringify(body),
    ...(pathParameters === undefined ? {} : { pathParameters }),
    userArn: worker ? TEST_WORKER_ARN : TEST_TENANT_ARN,
  });
  const result = (await (worker ? internal : api)(event, lambdaContext)) as {
    statusCode: number;
    body: string;
  };
  const error =
    result.statusCode < 400
      ? undefined
      : (JSON.parse(result.body) as { error?: { message?: string; field?: string } }).error;
  return { status: result.statusCode, error, body: result.body, writes: [...recorded.writes] };
}
export const created = (payload: unknown) => ({ type: "send-invoice", cron: "*/5 * * * *", payload });

/** Accepted with `status`, and every write it caused valid by DynamoDB's rules (dynamo-rules.ts); the job item written. */
export async function accepted(status: number, ...request: Parameters<typeof send>) {
  const answer = await send(...request);
  expect(answer.status, `${answer.body} ${JSON.stringify(recorded.lastError)}`).toBe(status);
  for (const write of answer.writes) expect(problemsOf(write), write.call).toEqual([]);
  const put = answer.writes.find(
    (w) => w.call === "PutItem" && (w.input as { Item: { sk: string } }).Item.sk === "JOB",
  );
  return { ...answer, job: (put?.input as { Item?: Record<string, unknown> } | undefined)?.Item };
}
/** Refused with a 4xx naming `field` (or a path inside it), nothing written. */
export async function refused(field: string, ...request: Parameters<typeof send>) {
  const answer = await send(...request);
  expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
  expect(answer.status, answer.body).toBeLessThan(500);
  expect(answer.error?.field, answer.body).toMatch(new RegExp(`^${field}(\\.|$)`));
  expect(answer.error?.message, answer.body).toContain(field);
  expect(answer.writes.map((w) => w.call)).toEqual([]);
}
