import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { isRepeatOf, type RunEvent } from "../../core/lifecycle/transition";
import type { FinishedRun } from "../../core/ports";
import { fromRunItem, runKey } from "./run-item";

/**
 * How the run store answers a write whose answer was lost (decision 0053): the SDK sent it
 * again, its condition failed on the first attempt's own effect, and the refusal is read as
 * the write applied where the item shows that effect.
 */

/** A write whose refusal may be its own effect met by its retry: the run's key and its event. */
export interface Repeatable {
  readonly jobId: string;
  readonly scheduledFor: number;
  readonly event: RunEvent;
}

/** What a finisher needs of the run it finished, from its item as it was (or as its finish left it). */
export function finishedRunOf(item: Record<string, unknown>): FinishedRun {
  const final = item.final === true;
  return {
    receiptHandle: typeof item.receiptHandle === "string" ? item.receiptHandle : undefined,
    final,
    tracked: final && typeof item.checkAt === "number",
    ...(typeof item.wakes === "number"
      ? { wakes: { scheduledFor: item.wakes, tenant: String(item.tenant), type: String(item.type) } }
      : {}),
  };
}

/**
 * The item a refused write met, when it is the write's own effect (isRepeatOf). DynamoDB
 * returns the item with the failure (ReturnValuesOnConditionCheckFailure, in attribute-value
 * form: the document client does not convert errors); dynalite predates that parameter and
 * returns none, so the item is read, consistently (in AWS only where no item exists).
 */
export async function repeatedItem(
  db: DynamoDBDocumentClient,
  tableName: string,
  error: unknown,
  repeat: Repeatable,
): Promise<Record<string, unknown> | undefined> {
  const returned = (error as { Item?: Record<string, AttributeValue> }).Item;
  const item = returned
    ? unmarshall(returned)
    : (
        await db.send(
          new GetCommand({
            TableName: tableName,
            Key: runKey(repeat.jobId, repeat.scheduledFor),
            ConsistentRead: true,
          }),
        )
      ).Item;
  if (!item) return undefined;
  const receiptHandle = typeof item.receiptHandle === "string" ? item.receiptHandle : undefined;
  return isRepeatOf({ ...fromRunItem(item), receiptHandle }, repeat.event) ? item : undefined;
}
