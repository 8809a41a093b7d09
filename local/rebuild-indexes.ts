import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Readable } from "node:stream";

/**
 * Rebuilds dynalite's secondary indexes from the items, before the local runtime opens its
 * data folder.
 *
 * Why: dynalite writes an item's index entries and the item itself as separate LevelDB writes
 * (index deletes, then index puts, then the item). A runtime killed between them leaves an
 * index out of step with its table: the crash-loop test found a run whose repair-index entry
 * was gone, so the repair pass never saw it again. DynamoDB keeps its indexes whatever happens
 * to a client, so this is the emulator's gap, closed here: every start drops each index and
 * writes it again from the items, with dynalite's own index code. Idempotent, so a kill during
 * the rebuild is mended by the next start.
 *
 * The same rebuild moves a data folder written before dynalite's index keys were patched
 * (dynalite-index-keys.ts) to the new keys: entries under the old keys would never be deleted.
 * A marker file in the folder names the key format its indexes were written with.
 */
const INDEX_FORMAT = "index keys: whole table key (patches/dynalite+4.0.0.patch)\n";
const FORMAT_FILE = "index-format";

/** Whether the folder's indexes were written (or last rebuilt) with today's index keys. */
export function indexFormatIsCurrent(path: string): boolean {
  try {
    return readFileSync(join(path, FORMAT_FILE), "utf8") === INDEX_FORMAT;
  } catch {
    return false;
  }
}
interface TableDefinition {
  readonly TableName: string;
  readonly GlobalSecondaryIndexes?: ReadonlyArray<{ readonly IndexName: string }>;
  readonly LocalSecondaryIndexes?: ReadonlyArray<{ readonly IndexName: string }>;
}

interface SubDb {
  createValueStream(options?: object): Readable;
}

interface DynaliteStore {
  readonly db: { close(): Promise<void> };
  readonly tableDb: SubDb;
  getItemDb(tableName: string): SubDb;
  deleteIndexDb(
    type: "Global" | "Local",
    tableName: string,
    indexName: string,
    done: (error?: Error) => void,
  ): void;
}

interface DynaliteDb {
  create(options: { path: string }): DynaliteStore;
  updateIndexes(
    store: DynaliteStore,
    table: TableDefinition,
    existing: null,
    item: unknown,
    done: (error?: Error) => void,
  ): void;
}

const require = createRequire(import.meta.url);
const dynaliteDb = require("dynalite/db/index.js") as DynaliteDb;

async function valuesOf<T>(stream: Readable): Promise<T[]> {
  const values: T[] = [];
  for await (const value of stream) values.push(value as T);
  return values;
}

function callback(run: (done: (error?: Error) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => run((error) => (error ? reject(error) : resolve())));
}

export async function rebuildIndexes(path: string): Promise<{ tables: number; items: number }> {
  const store = dynaliteDb.create({ path });
  let items = 0;
  try {
    const tables = await valuesOf<TableDefinition>(store.tableDb.createValueStream());
    for (const table of tables) {
      const indexes = [
        ...(table.GlobalSecondaryIndexes ?? []).map((index) => ["Global", index.IndexName] as const),
        ...(table.LocalSecondaryIndexes ?? []).map((index) => ["Local", index.IndexName] as const),
      ];
      if (indexes.length === 0) continue;
      for (const [type, name] of indexes) {
        await callback((done) => store.deleteIndexDb(type, table.TableName, name, done));
      }
      for (const item of await valuesOf<unknown>(store.getItemDb(table.TableName).createValueStream())) {
        await callback((done) => dynaliteDb.updateIndexes(store, table, null, item, done));
        items += 1;
      }
    }
    writeFileSync(join(path, FORMAT_FILE), INDEX_FORMAT);
    return { tables: tables.length, items };
  } finally {
    await store.db.close();
  }
}
