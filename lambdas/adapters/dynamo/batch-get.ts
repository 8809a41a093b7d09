import { BatchGetCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

/** BatchGetItem's most keys a request. */
const KEYS_A_REQUEST = 100;
/** Unprocessed keys (a throttled partition) are asked for again this many times, backing off. */
const RETRIES = 8;
const BACKOFF = { baseMs: 50, capMs: 2_000 };

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * The items under `keys` (those that exist, in no particular order), 100 keys a request, keys
 * DynamoDB left unprocessed asked for again after a backoff. Where an index holds only keys
 * (decision 0041), its readers fetch the items themselves with this.
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
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > RETRIES) {
        throw new Error(`BatchGetItem: ${pending.length} keys still unprocessed after ${RETRIES} retries`);
      }
      // DynamoDB leaves keys unprocessed when the table or a partition is throttled: back off
      // (full jitter) before asking again, as AWS advises.
      if (attempt > 0) await sleep(Math.random() * Math.min(BACKOFF.capMs, BACKOFF.baseMs * 2 ** attempt));
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
