import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { RateLimiter } from "../../core/ports";
import { JOBS_TABLE } from "../../definitions/table";

/**
 * Per-tenant starts per second, counted in one item per tenant and second
 * (pk RATE#<tenant>, sk <epoch second>) with an atomic ADD: one write per tenant per lease
 * batch, not per run. Runs counted but refused still count, which only makes the limit
 * stricter within that second. The items expire through the table's TTL a minute later.
 */
export class DynamoRateLimiter implements RateLimiter {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly perSecond: number,
  ) {}

  async take(tenant: string, count: number, now: number): Promise<number> {
    if (this.perSecond <= 0 || count <= 0) return count;
    const second = Math.floor(now / 1000);
    const { Attributes } = await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: `RATE#${tenant}`, sk: String(second) },
        UpdateExpression: "ADD used :n SET #ttl = :ttl",
        ExpressionAttributeNames: { "#ttl": JOBS_TABLE.timeToLiveAttribute },
        ExpressionAttributeValues: { ":n": count, ":ttl": second + 60 },
        ReturnValues: "UPDATED_NEW",
      }),
    );
    const used = typeof Attributes?.used === "number" ? Attributes.used : count;
    return Math.max(0, Math.min(count, this.perSecond - (used - count)));
  }
}
