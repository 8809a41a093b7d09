import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { RuntimeConfig } from "./environment";

/**
 * SDK clients. In AWS they use the Lambda's region and role. Against the emulators they get an
 * explicit endpoint and the documented dummy credentials, and SQS is told not to take its
 * endpoint from the queue URL's host.
 */
const LOCAL_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

export function createDynamoClient(config: Pick<RuntimeConfig, "region" | "dynamodbEndpoint">) {
  return new DynamoDBClient({
    region: config.region,
    ...(config.dynamodbEndpoint ? { endpoint: config.dynamodbEndpoint, credentials: LOCAL_CREDENTIALS } : {}),
  });
}

export function createDocumentClient(config: Pick<RuntimeConfig, "region" | "dynamodbEndpoint">) {
  return documentClientOf(createDynamoClient(config));
}

/** The document client the stores use, over a DynamoDB client (the local runtime's may inject faults). */
export function documentClientOf(client: DynamoDBClient) {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

export function createSqsClient(config: Pick<RuntimeConfig, "region" | "sqsEndpoint">) {
  return new SQSClient({
    region: config.region,
    ...(config.sqsEndpoint
      ? { endpoint: config.sqsEndpoint, credentials: LOCAL_CREDENTIALS, useQueueUrlAsEndpoint: false }
      : {}),
  });
}
