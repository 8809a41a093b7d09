import { BatchGetCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

/** BatchGetItem's most keys a request. */
const KEYS_A_REQUEST = 100;

/**
 * The items under `keys` (those that exist, in no particular order), 100 keys a request, keys
 * DynamoDB left unprocessed asked for again. Where an index holds only keys (decision 0041), its
 * readers fetch the items themselves with this.
 */
export async function batchGetItems(
  db: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  consistentRead: boolean,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += KEYS_A_REQUEST) {
    let pending = keys.slice(start, start + KEYS_A_REQUEST);
    while (pending.length > 0) {
      const result = await db.send(
        new BatchGetCommand({
          RequestItems: { [tableName]: { Keys: pending, ConsistentRead: consistentRead } },
        }),
      );
      items.push(...(result.Responses?.[tableName] ?? []));
      pending = (result.UnprocessedKeys?.[tableName]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  return items;
}
