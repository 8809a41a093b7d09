import { BatchGetCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

/** BatchGetItem's most keys a request. */
const KEYS_A_REQUEST = 100;
/**
 * Unprocessed keys are asked for again: at once while each answer brings some items (a reply
 * past its 16 MB, large items), with backoff after an answer that brought none (throttled),
 * giving up after this many of those in a row.
 */
const STALLED_RETRIES = 8;
const BACKOFF = { baseMs: 50, capMs: 2_000 };

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * The items under `keys` (those that exist, in no particular order), 100 keys a request, keys
 * DynamoDB left unprocessed asked for again (STALLED_RETRIES). Where an index holds only keys
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
    let stalled = 0;
    while (pending.length > 0) {
      if (stalled > STALLED_RETRIES) {
        throw new Error(`BatchGetItem: ${pending.length} keys unprocessed in ${stalled} answers in a row`);
      }
      // Nothing came back last time: the table or a partition is throttled. Back off (full
      // jitter) before asking again, as AWS advises.
      if (stalled > 0) await sleep(Math.random() * Math.min(BACKOFF.capMs, BACKOFF.baseMs * 2 ** stalled));
      const result = await db.send(
        new BatchGetCommand({
          RequestItems: { [tableName]: { Keys: pending, ConsistentRead: consistentRead } },
        }),
      );
      const got = result.Responses?.[tableName] ?? [];
      items.push(...got);
      pending = (result.UnprocessedKeys?.[tableName]?.Keys ?? []) as Record<string, unknown>[];
      stalled = got.length > 0 ? 0 : stalled + 1;
    }
  }
  return items;
}
