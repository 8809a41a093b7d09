import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TableDefinition } from "../../definitions/table";
import { itemSize, writeUnits } from "./item-size";

/**
 * Counts the DynamoDB capacity a client consumes: asks for ReturnConsumedCapacity on every call
 * and adds up what comes back, split into reads and writes. One middleware, so no adapter call
 * can be missed. Used by the benchmarks.
 *
 * dynalite reports a write's units for the table only; DynamoDB also charges each global
 * secondary index the write touches. Given `images` (a way to read an item as it is), writes are
 * counted by DynamoDB's own rules instead (item-size.ts): the item is read before and after each
 * write and the table's and every index's units are worked out from the two images.
 */
export interface CapacityMeter {
  readonly reads: () => number;
  readonly writes: () => number;
  /** Of the writes, the units spent on index entries (0 without `images`). */
  readonly indexWrites: () => number;
  readonly calls: () => Readonly<Record<string, number>>;
  reset(): void;
}

const READS = new Set(["GetItemCommand", "QueryCommand", "ScanCommand", "BatchGetItemCommand"]);

interface Consumed {
  CapacityUnits?: number;
}

type Item = Record<string, AttributeValue>;

export interface ItemImages {
  readonly table: TableDefinition;
  /** The item under `key` as it is now (a strongly consistent read), or undefined. */
  read(key: Item): Promise<Item | undefined>;
}

const WRITES = new Set(["PutItemCommand", "UpdateItemCommand", "DeleteItemCommand"]);

export function meterCapacity(client: DynamoDBClient, images?: ItemImages): CapacityMeter {
  let reads = 0;
  let writes = 0;
  let indexWrites = 0;
  let calls: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity ??= "TOTAL";
      const name = context.commandName ?? "unknown";
      if (images && WRITES.has(name)) {
        calls[name] = (calls[name] ?? 0) + 1;
        return next(args); // counted by the image meter below, once the input is marshalled
      }
      const result = await next(args);
      const output = result.output as { ConsumedCapacity?: Consumed | Consumed[] };
      const consumed = [output.ConsumedCapacity ?? []]
        .flat()
        .reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      calls[name] = (calls[name] ?? 0) + 1;
      if (READS.has(name)) reads += consumed;
      else writes += consumed;
      return result;
    },
    { step: "initialize", name: "jobschedCapacityMeter" },
  );
  if (images) {
    // At the build step the request is serialized: its JSON body holds the key in DynamoDB's
    // attribute-value form, whatever client (document or not) built it.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? "unknown";
        const raw = (args.request as { body?: unknown } | undefined)?.body;
        const body = raw instanceof Uint8Array ? new TextDecoder().decode(raw) : raw;
        if (!WRITES.has(name) || typeof body !== "string") return next(args);
        const key = keyOf(images.table, JSON.parse(body) as Record<string, unknown>);
        const before = await images.read(key);
        try {
          const result = await next(args);
          const units = writeUnits(images.table, before, await images.read(key));
          writes += units.table + units.indexes;
          indexWrites += units.indexes;
          return result;
        } catch (error) {
          // A write refused by its condition still consumes the table's units (no index is touched).
          writes += Math.max(1, Math.ceil((before ? itemSize(before) : 0) / 1024));
          throw error;
        }
      },
      { step: "build", name: "jobschedWriteUnitMeter" },
    );
  }
  return {
    reads: () => reads,
    writes: () => writes,
    indexWrites: () => indexWrites,
    calls: () => ({ ...calls }),
    reset: () => {
      reads = 0;
      writes = 0;
      indexWrites = 0;
      calls = {};
    },
  };
}

function keyOf(table: TableDefinition, input: Record<string, unknown>): Item {
  const source = (input.Key ?? input.Item ?? {}) as Item;
  const key: Item = {};
  for (const name of [table.partitionKey.name, table.sortKey.name]) {
    if (source[name] !== undefined) key[name] = source[name];
  }
  return key;
}
