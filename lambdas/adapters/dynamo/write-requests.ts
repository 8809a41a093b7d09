import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { TableDefinition } from "../../definitions/table";

/**
 * Which items a write request touches, read from its serialized JSON body: there the keys are in
 * DynamoDB's attribute-value form whatever client (document or not) built the request, so they
 * can be handed back to GetItem as they are. The capacity meter reads each item before and after
 * the write to work out its units.
 */
type Item = Record<string, AttributeValue>;

/** put/update/delete change the item; check (a transaction's ConditionCheck) only reads it. */
export type WriteKind = "put" | "update" | "delete" | "check";

export interface RequestedWrite {
  readonly kind: WriteKind;
  readonly key: Item;
}

export const BATCH_WRITE = "BatchWriteItemCommand";
export const TRANSACT_WRITE = "TransactWriteItemsCommand";
const WRITES = new Set([
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  BATCH_WRITE,
  TRANSACT_WRITE,
]);

export const isWriteCommand = (command: string) => WRITES.has(command);

interface Action {
  Item?: Item;
  Key?: Item;
}

interface WriteRequest {
  PutRequest?: Action;
  DeleteRequest?: Action;
}

interface TransactItem {
  Put?: Action;
  Update?: Action;
  Delete?: Action;
  ConditionCheck?: Action;
}

interface WriteBody {
  Item?: Item;
  Key?: Item;
  RequestItems?: Record<string, WriteRequest[]>;
  TransactItems?: TransactItem[];
}

/** The table's primary key out of an item or a key. */
export function keyOf(table: TableDefinition, source: Item = {}): Item {
  const key: Item = {};
  for (const name of [table.partitionKey.name, table.sortKey.name]) {
    if (source[name] !== undefined) key[name] = source[name];
  }
  return key;
}

/** A key as a string, to match a batch's unprocessed requests with the ones sent. */
export const keyId = (key: Item) =>
  JSON.stringify(Object.entries(key).sort(([a], [b]) => a.localeCompare(b)));

const batchWrite = (table: TableDefinition, request: WriteRequest): RequestedWrite =>
  request.PutRequest
    ? { kind: "put", key: keyOf(table, request.PutRequest.Item) }
    : { kind: "delete", key: keyOf(table, request.DeleteRequest?.Key) };

function transactWrite(table: TableDefinition, item: TransactItem): RequestedWrite {
  if (item.Put) return { kind: "put", key: keyOf(table, item.Put.Item) };
  if (item.Update) return { kind: "update", key: keyOf(table, item.Update.Key) };
  if (item.Delete) return { kind: "delete", key: keyOf(table, item.Delete.Key) };
  return { kind: "check", key: keyOf(table, item.ConditionCheck?.Key) };
}

/**
 * The items `command` writes, in request order; none for a command that is not a write. Every
 * table a batch or transaction names is read as `table`: the meter serves one table.
 */
export function requestedWrites(table: TableDefinition, command: string, body: WriteBody): RequestedWrite[] {
  if (command === "PutItemCommand") return [{ kind: "put", key: keyOf(table, body.Item) }];
  if (command === "UpdateItemCommand") return [{ kind: "update", key: keyOf(table, body.Key) }];
  if (command === "DeleteItemCommand") return [{ kind: "delete", key: keyOf(table, body.Key) }];
  if (command === BATCH_WRITE) {
    return Object.values(body.RequestItems ?? {}).flatMap((requests) =>
      requests.map((r) => batchWrite(table, r)),
    );
  }
  if (command === TRANSACT_WRITE) return (body.TransactItems ?? []).map((item) => transactWrite(table, item));
  return [];
}

/** The keys of a BatchWriteItem's UnprocessedItems: DynamoDB did not write them, nor charge them. */
export function unprocessedKeys(table: TableDefinition, output: { UnprocessedItems?: unknown }): Set<string> {
  const unprocessed = (output.UnprocessedItems ?? {}) as Record<string, WriteRequest[]>;
  return new Set(
    Object.values(unprocessed).flatMap((requests) => requests.map((r) => keyId(batchWrite(table, r).key))),
  );
}
