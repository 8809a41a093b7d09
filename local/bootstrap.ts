import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  ResourceInUseException,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { createDynamoClient, createSqsClient } from "../lambdas/adapters/clients";
import type { RuntimeConfig } from "../lambdas/adapters/environment";
import { ALL_QUEUES, type QueueDefinition } from "../lambdas/definitions/queues";
import type { SchedulerSettings } from "../lambdas/definitions/settings";
import { JOBS_TABLE, type TableDefinition } from "../lambdas/definitions/table";

/**
 * Creates the table and queues the CDK stack would create, from the same definitions, if they
 * are missing. Both steps are idempotent, so every start of the local runtime runs them.
 */
export function createTableInput(
  tableName: string,
  table: TableDefinition = JOBS_TABLE,
): CreateTableCommandInput {
  const attributes = new Map<string, "S" | "N">();
  for (const key of [
    table.partitionKey,
    table.sortKey,
    ...table.indexes.flatMap((i) => [i.partitionKey, i.sortKey]),
  ]) {
    attributes.set(key.name, key.type);
  }
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    })),
    KeySchema: [
      { AttributeName: table.partitionKey.name, KeyType: "HASH" },
      { AttributeName: table.sortKey.name, KeyType: "RANGE" },
    ],
    GlobalSecondaryIndexes: table.indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey.name, KeyType: "HASH" },
        { AttributeName: index.sortKey.name, KeyType: "RANGE" },
      ],
      Projection:
        index.projectedAttributes.length === 0
          ? { ProjectionType: "KEYS_ONLY" }
          : { ProjectionType: "INCLUDE", NonKeyAttributes: [...index.projectedAttributes] },
    })),
  };
}

export async function ensureTable(
  dynamodb: DynamoDBClient,
  tableName: string,
  table: TableDefinition = JOBS_TABLE,
): Promise<void> {
  try {
    await dynamodb.send(new CreateTableCommand(createTableInput(tableName, table)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException) && (error as Error).name !== "ResourceInUseException")
      throw error;
  }
}

/** Physical queue names are `<prefix>-<logical name>`; returns each queue's URL by logical name. */
export async function ensureQueues(sqs: SQSClient, prefix: string): Promise<Map<string, string>> {
  const urls = new Map<string, string>();
  for (const queue of ALL_QUEUES) {
    urls.set(queue.logicalName, await ensureQueue(sqs, prefix, queue, urls));
  }
  return urls;
}

async function ensureQueue(
  sqs: SQSClient,
  prefix: string,
  queue: QueueDefinition,
  created: ReadonlyMap<string, string>,
): Promise<string> {
  const attributes: Record<string, string> = {
    VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(queue.retentionSeconds),
  };
  if (queue.deadLetter) {
    const dlqUrl = created.get(queue.deadLetter.logicalName);
    if (!dlqUrl) throw new Error(`dead-letter queue ${queue.deadLetter.logicalName} must be created first`);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ["QueueArn"] }),
    );
    attributes.RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: Attributes?.QueueArn,
      maxReceiveCount: queue.deadLetter.maxReceiveCount,
    });
  }
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `${prefix}-${queue.logicalName}`, Attributes: attributes }),
  );
  if (!QueueUrl) throw new Error(`SQS returned no URL for ${queue.logicalName}`);
  return QueueUrl;
}

/**
 * The whole local bootstrap: the table and every queue on the given emulators, and the runtime
 * configuration that points the handlers at them. The local runtime, the tests and the
 * benchmarks all start from this.
 */
export async function bootstrapStack(options: {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly tableName: string;
  /** Physical queue names are `<prefix>-<logical name>`; default: the table name. */
  readonly queuePrefix?: string;
  readonly settings: SchedulerSettings;
  /** The table's layout: today's (JOBS_TABLE) unless a test builds an older one. */
  readonly table?: TableDefinition;
}): Promise<RuntimeConfig> {
  const base = {
    region: "us-east-1",
    tableName: options.tableName,
    dynamodbEndpoint: options.dynamodbEndpoint,
    sqsEndpoint: options.sqsEndpoint,
    settings: options.settings,
  };
  await ensureTable(createDynamoClient(base), base.tableName, options.table);
  const queueUrls = await ensureQueues(createSqsClient(base), options.queuePrefix ?? options.tableName);
  return {
    ...base,
    runQueueUrl: queueUrls.get("runs") ?? "",
    sweepQueueUrl: queueUrls.get("sweeps") ?? "",
    pushQueueUrl: queueUrls.get("push") ?? "",
  };
}
