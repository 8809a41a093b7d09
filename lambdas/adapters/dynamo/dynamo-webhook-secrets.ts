import { type DynamoDBDocumentClient, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { z } from "zod";
import type { WebhookSecret, WebhookSecretStore } from "../../core/ports";
import { WEBHOOK_SECRET_KEY_PREFIX } from "../../definitions/table";
import { applied } from "./conditions";

const secretItem = z.object({
  current: z.string(),
  createdAt: z.number(),
  next: z.string().optional(),
  previous: z.string().optional(),
  previousValidUntil: z.number().optional(),
});

/**
 * One item per tenant (pk WEBHOOK#<tenant>, sk SECRET), in the jobs table, which is encrypted
 * at rest; no index key is on it, so it is in no index. Only the API's and the dispatcher's
 * roles may read it: IAM denies the others its partition-key prefix (decision 0036). A
 * rotation is conditional on the secret it replaces, so two at once cannot both believe they
 * set the one shown.
 */
export class DynamoWebhookSecretStore implements WebhookSecretStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(tenant: string): Promise<WebhookSecret | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(tenant), ConsistentRead: true }),
    );
    return Item ? secretItem.parse(Item) : undefined;
  }

  put(tenant: string, secret: WebhookSecret, expected: string | undefined): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...keyOf(tenant), ...secret },
          ...(expected === undefined
            ? { ConditionExpression: "attribute_not_exists(pk)" }
            : {
                ConditionExpression: "#current = :expected",
                ExpressionAttributeNames: { "#current": "current" },
                ExpressionAttributeValues: { ":expected": expected },
              }),
        }),
      ),
    );
  }
}

function keyOf(tenant: string) {
  return { pk: `${WEBHOOK_SECRET_KEY_PREFIX}${tenant}`, sk: "SECRET" };
}
