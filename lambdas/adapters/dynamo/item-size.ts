import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { numberSize } from "@jobsched/contract";
import type { TableDefinition } from "../../definitions/table";

/**
 * DynamoDB's own rules for the size of an item and the write units a write consumes, table and
 * global secondary indexes together. The local emulator reports the table's units only, so the
 * benchmarks count with these instead (docs: "DynamoDB item sizes and formats", "Global secondary
 * indexes: provisioned throughput considerations", "Managing capacity for transactions").
 * The read-unit rules are in read-units.ts.
 */
type Item = Record<string, AttributeValue>;

const utf8 = (text: string) => Buffer.byteLength(text, "utf8");

/** The size of one attribute value in bytes (doc page "DynamoDB item sizes and formats"). */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  // A list or map: 3 bytes, plus 1 byte and the size of each element (and each key's name).
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M !== undefined) {
    return 3 + Object.entries(value.M).reduce((sum, [name, v]) => sum + 1 + utf8(name) + valueSize(v), 0);
  }
  return 0;
}

/** The size of an item in bytes: each attribute's name (UTF-8) and value. */
export function itemSize(item: Item): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}

const KB = 1024;
/** Write sizes are rounded up to the next 1 KB, one unit each; any write is at least one. */
const units = (bytes: number) => Math.max(1, Math.ceil(bytes / KB));
const sizeOf = (item: Item | undefined) => (item ? itemSize(item) : 0);

/** The units one write consumes: the table's, and all its global secondary indexes' together. */
export interface WriteUnits {
  readonly table: number;
  readonly indexes: number;
}

/** The part of an item an index keeps: its keys, the table's keys and the projected attributes. */
function indexEntry(item: Item, keep: readonly string[]): Item {
  const entry: Item = {};
  for (const name of keep) if (item[name] !== undefined) entry[name] = item[name];
  return entry;
}

const sameValue = (a: AttributeValue | undefined, b: AttributeValue | undefined) =>
  JSON.stringify(a) === JSON.stringify(b);

/**
 * The write units a successful PutItem, UpdateItem or DeleteItem (or one BatchWriteItem request)
 * of `after` over `before` consumes; either may be absent: a put of a new item, a delete. The
 * table: the larger image, a unit per KB (doc page "DynamoDB read and write operations": write request units).
 * Each index ("Global secondary indexes: provisioned throughput considerations"): an entry added
 * or removed is one write of its size; a key that changed is a delete and a put; projected
 * attributes that changed under the same key, one update; nothing it keeps changed, nothing.
 */
export function writeUnits(
  table: TableDefinition,
  before: Item | undefined,
  after: Item | undefined,
): WriteUnits {
  const tableUnits = units(Math.max(sizeOf(before), sizeOf(after)));
  let indexUnits = 0;
  for (const index of table.indexes) {
    const keys = [index.partitionKey.name, index.sortKey.name];
    const keep = [...keys, table.partitionKey.name, table.sortKey.name, ...index.projectedAttributes];
    const inIndex = (item: Item | undefined) =>
      item !== undefined && keys.every((k) => item[k] !== undefined);
    const was = inIndex(before) ? indexEntry(before as Item, keep) : undefined;
    const is = inIndex(after) ? indexEntry(after as Item, keep) : undefined;
    if (!was && !is) continue;
    if (!was || !is) {
      indexUnits += units(itemSize((was ?? is) as Item));
      continue;
    }
    if (keys.some((k) => !sameValue(was[k], is[k]))) {
      indexUnits += units(itemSize(was)) + units(itemSize(is));
      continue;
    }
    if (keep.some((name) => !sameValue(was[name], is[name]))) {
      indexUnits += units(Math.max(itemSize(was), itemSize(is)));
    }
  }
  return { table: tableUnits, indexes: indexUnits };
}

/**
 * A Put, Update or Delete inside TransactWriteItems. "Managing capacity for transactions": DynamoDB
 * writes every item twice, once to prepare and once to commit, so the table pays 2 units per KB.
 * The indexes are not part of the transaction ("Transactions: how it works": once a transaction
 * completes its changes propagate to the global secondary indexes), so our reading is that each
 * index pays as for a plain write, not twice.
 */
export function transactionalWriteUnits(
  table: TableDefinition,
  before: Item | undefined,
  after: Item | undefined,
): WriteUnits {
  const plain = writeUnits(table, before, after);
  return { table: 2 * plain.table, indexes: plain.indexes };
}

/**
 * A ConditionCheck inside TransactWriteItems: nothing is written, but the item is still prepared
 * and committed, so it costs as a transactional write of the item as it is: 2 units per KB of the
 * existing item, at least 2 ("Managing capacity for transactions"). No index entry changes.
 */
export function conditionCheckUnits(existing: Item | undefined): WriteUnits {
  return { table: 2 * units(sizeOf(existing)), indexes: 0 };
}

/**
 * A write refused by its condition (ConditionalCheckFailedException) still consumes the table's
 * write units, and no index is touched. "Working with items: capacity units consumed by
 * conditional writes": an item that does not exist, one unit; one that does, by its size. (The
 * "write request units" page words it as the size of the new item; we follow the item page,
 * since an UpdateItem's new item is never built when its condition fails.)
 */
export function conditionFailedUnits(existing: Item | undefined): WriteUnits {
  return { table: units(sizeOf(existing)), indexes: 0 };
}
