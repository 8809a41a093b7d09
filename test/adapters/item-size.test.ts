import { describe, expect, it } from "vitest";
import { itemSize, valueSize, writeUnits } from "../../lambdas/adapters/dynamo/item-size";
import type { TableDefinition } from "../../lambdas/definitions/table";

/**
 * DynamoDB's size and write-unit rules, worked by hand from its documentation: the benchmarks
 * count writes with these because the local emulator charges the table only.
 */
describe("item size by DynamoDB's rules", () => {
  it("counts names and values: UTF-8 strings, numbers by significant digits, containers with overhead", () => {
    expect(valueSize({ S: "héllo" })).toBe(6); // é is two bytes in UTF-8
    expect(valueSize({ N: "12345" })).toBe(4); // 5 digits: 3 bytes + 1
    expect(valueSize({ N: "-0.00120" })).toBe(2); // "12": 1 byte + 1
    expect(valueSize({ N: "1".repeat(38) })).toBe(20);
    expect(valueSize({ BOOL: true })).toBe(1);
    expect(valueSize({ NULL: true })).toBe(1);
    expect(valueSize({ L: [] })).toBe(3);
    expect(valueSize({ L: [{ S: "ab" }, { N: "7" }] })).toBe(3 + (1 + 2) + (1 + 2));
    expect(valueSize({ M: { k: { S: "v" } } })).toBe(3 + 1 + 1 + 1);
    expect(itemSize({ pk: { S: "JOB#1" }, n: { N: "10" } })).toBe(2 + 5 + 1 + 2);
  });
});

const table: TableDefinition = {
  logicalName: "t",
  timeToLiveAttribute: "ttl",
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  indexes: [
    {
      name: "by-due",
      partitionKey: { name: "dueKey", type: "S" },
      sortKey: { name: "dueAt", type: "N" },
      projectedAttributes: ["status"],
    },
  ],
};
const base = { pk: { S: "JOB#1" }, sk: { S: "JOB" }, status: { S: "active" }, note: { S: "x" } };
const filed = { ...base, dueKey: { S: "1#0001" }, dueAt: { N: "100" } };

describe("write units by DynamoDB's rules", () => {
  it("charges the table a unit per KB of the larger image", () => {
    const big = { ...base, blob: { S: "x".repeat(2_000) } };
    expect(writeUnits(table, undefined, base)).toEqual({ table: 1, indexes: 0 });
    expect(writeUnits(table, base, big)).toEqual({ table: 2, indexes: 0 });
    expect(writeUnits(table, big, base)).toEqual({ table: 2, indexes: 0 });
  });

  it("charges an index for an entry added or removed, a moved key twice, a projected change once", () => {
    expect(writeUnits(table, undefined, filed).indexes).toBe(1); // added
    expect(writeUnits(table, filed, base).indexes).toBe(1); // removed
    expect(writeUnits(table, filed, { ...filed, dueAt: { N: "160" } }).indexes).toBe(2); // moved
    expect(writeUnits(table, filed, { ...filed, status: { S: "paused" } }).indexes).toBe(1); // projected
    expect(writeUnits(table, filed, { ...filed, note: { S: "y" } }).indexes).toBe(0); // not kept
    expect(writeUnits(table, base, { ...base, note: { S: "y" } }).indexes).toBe(0); // never in it
  });
});
