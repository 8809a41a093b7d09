import { randomBytes } from "node:crypto";
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { inject } from "vitest";
import { createDocumentClient, createSqsClient } from "../../lambdas/adapters/clients";
import type { RuntimeConfig } from "../../lambdas/adapters/environment";
import { createSchedulerDeps, type HandlerDeps } from "../../lambdas/adapters/scheduler-deps";
import type { Clock } from "../../lambdas/core/clock";
import { LOCAL_SETTINGS, type SchedulerSettings } from "../../lambdas/definitions/settings";
import type { TableDefinition } from "../../lambdas/definitions/table";
import type { WorkerBindings } from "../../lambdas/definitions/worker-bindings";
import { bootstrapStack, ensureQueues } from "../../local/bootstrap";
import { loadLocalCredentials } from "../../local/local-credentials";
import { withSqsLimits } from "../../local/sqs-aws-limits";
import { TEST_WORKER_BINDINGS } from "./http-event";

/**
 * A private table and queue set on the shared emulators, and the real adapters wired to them:
 * what an integration test drives the real handlers with. No mocks on this path.
 */
export interface TestStack {
  readonly config: RuntimeConfig;
  readonly deps: HandlerDeps;
  readonly db: ReturnType<typeof createDocumentClient>;
  readonly sqs: ReturnType<typeof createSqsClient>;
}

/** Creates the stack's queues again, as after an SQS emulator restart; the URLs stay the same. */
export async function recreateQueues(stack: TestStack): Promise<void> {
  const prefix = stack.config.tableName;
  await ensureQueues(stack.sqs, prefix);
}

export async function createTestStack(
  name: string,
  options: {
    clock?: Clock;
    settings?: Partial<SchedulerSettings>;
    sqsEndpoint?: string;
    workerBindings?: WorkerBindings;
    /** An older layout of the table (the upgrade test); default today's. */
    table?: TableDefinition;
  } = {},
): Promise<TestStack> {
  const unique = `${name}-${randomBytes(4).toString("hex")}`;
  const config = await bootstrapStack({
    dynamodbEndpoint: inject("dynamoEndpoint"),
    sqsEndpoint: options.sqsEndpoint ?? inject("sqsEndpoint"),
    tableName: `test-${unique}`,
    settings: { ...LOCAL_SETTINGS, ...options.settings },
    ...(options.table ? { table: options.table } : {}),
  });
  // SQS held to AWS's limits; the dev credentials' worker bindings, as the local runtime has them.
  const sqs = withSqsLimits(createSqsClient(config));
  const workerBindings =
    options.workerBindings ?? new Map([...loadLocalCredentials().workerBindings, ...TEST_WORKER_BINDINGS]);
  const deps = createSchedulerDeps({ ...config, workerBindings }, undefined, sqs);
  return {
    config,
    deps: options.clock ? { ...deps, clock: options.clock } : deps,
    db: createDocumentClient(config),
    sqs,
  };
}

/** The lane queues (one per tenant) that hold runs of `type`, from the table's lane records. */
export async function laneQueueUrls(stack: TestStack, type: string): Promise<string[]> {
  const { Items = [] } = await stack.db.send(
    new QueryCommand({
      TableName: stack.config.tableName,
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": `LANE#${type}` },
    }),
  );
  return Items.map((item) => String(item.queueUrl));
}

/** Messages waiting (visible, delayed or in flight) in all lanes of `type`. */
export async function laneMessageCount(stack: TestStack, type: string): Promise<number> {
  let total = 0;
  for (const QueueUrl of await laneQueueUrls(stack, type)) {
    const { Attributes } = await stack.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl,
        AttributeNames: [
          "ApproximateNumberOfMessages",
          "ApproximateNumberOfMessagesDelayed",
          "ApproximateNumberOfMessagesNotVisible",
        ],
      }),
    );
    total +=
      Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }
  return total;
}

/**
 * The messages in the lanes of `type` (of `tenant` only, when given), by state: visible,
 * delayed, and in flight (received and not deleted, or hidden again).
 */
export async function laneMessageStates(
  stack: TestStack,
  type: string,
  tenant?: string,
): Promise<{ visible: number; delayed: number; inFlight: number }> {
  const { Items = [] } = await stack.db.send(
    new QueryCommand({
      TableName: stack.config.tableName,
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": `LANE#${type}` },
    }),
  );
  const states = { visible: 0, delayed: 0, inFlight: 0 };
  for (const item of Items) {
    if (tenant !== undefined && item.tenant !== tenant) continue;
    const { Attributes } = await stack.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: String(item.queueUrl),
        AttributeNames: [
          "ApproximateNumberOfMessages",
          "ApproximateNumberOfMessagesDelayed",
          "ApproximateNumberOfMessagesNotVisible",
        ],
      }),
    );
    states.visible += Number(Attributes?.ApproximateNumberOfMessages ?? 0);
    states.delayed += Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0);
    states.inFlight += Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }
  return states;
}
