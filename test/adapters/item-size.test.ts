import { describe, expect, it } from "vitest";
import {
  conditionCheckUnits,
  conditionFailedUnits,
  itemSize,
  transactionalWriteUnits,
  valueSize,
  writeUnits,
} from "../../lambdas/adapters/dynamo/item-size";
import { METERED_TABLE } from "../support/metered-table";

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

  // Each figure below applies the formula of the doc page "DynamoDB item sizes and formats".
  it("sizes strings by their UTF-8 bytes, names included", () => {
    // "name" is 4 bytes; "José" is J, o, s (1 byte each) and é (2 bytes) = 5.
    expect(itemSize({ name: { S: "José" } })).toBe(4 + 5);
    // "€" is 3 bytes in UTF-8 and 1 UTF-16 unit: the size is not the JavaScript length.
    expect(itemSize({ "€": { S: "€€" } })).toBe(3 + 6);
  });

  it("sizes numbers by significant digits: leading and trailing zeroes trimmed, 1 byte per two, plus 1", () => {
    // "0012.3400": significant digits 1234 (4 digits: 2 bytes) + 1 byte = 3; name "n" 1 byte.
    expect(itemSize({ n: { N: "0012.3400" } })).toBe(1 + 3);
    // 38 significant digits, the most a number may have: 19 bytes + 1 = 20.
    expect(valueSize({ N: "12345678901234567890123456789012345678" })).toBe(20);
    // 1000000 is one significant digit: ceil(1 / 2) = 1 byte + 1 = 2; a set adds up its members.
    expect(valueSize({ NS: ["1000000", "123"] })).toBe(2 + 3);
  });

  it("sizes binary by its raw bytes, not its base64 text; null and booleans 1 byte", () => {
    // 10 raw bytes travel as 16 base64 characters; the 10 count.
    expect(itemSize({ bin: { B: new Uint8Array(10) } })).toBe(3 + 10);
    expect(itemSize({ ok: { BOOL: false }, none: { NULL: true } })).toBe(2 + 1 + 4 + 1);
  });

  it("gives a list or map 3 bytes of overhead and each element 1 more, a map element its name too", () => {
    // Empty: the name + 3.
    expect(itemSize({ tags: { L: [] } })).toBe(4 + 3);
    expect(itemSize({ meta: { M: {} } })).toBe(4 + 3);
    // A map of a: "xy" and b: 5 = 3 + (1 + 1 + 2) + (1 + 1 + 2) = 11.
    expect(valueSize({ M: { a: { S: "xy" }, b: { N: "5" } } })).toBe(11);
    // Nested: [[], null] = 3 + (1 + 3) + (1 + 1) = 9.
    expect(valueSize({ L: [{ L: [] }, { NULL: true }] })).toBe(9);
  });
});

/** An item of exactly `bytes` bytes: pk "k" (2 + 1) and pad (3 + the rest). */
const sized = (bytes: number) => ({ pk: { S: "k" }, pad: { S: "x".repeat(bytes - 6) } });
const KB = 1024;

/** The by-due index keeps `status`; by-tenant is never touched by these items. */
const table = METERED_TABLE;
const base = { pk: { S: "JOB#1" }, sk: { S: "JOB" }, status: { S: "active" }, note: { S: "x" } };
const filed = { ...base, dueKey: { S: "1#0001" }, dueAt: { N: "100" } };

describe("write units by DynamoDB's rules", () => {
  it('rounds each write up to the next 1 KB: the examples of "DynamoDB read and write operations"', () => {
    const plain = { ...table, indexes: [] };
    expect(itemSize(sized(500))).toBe(500);
    // Writing a 500-byte item costs as writing a 1 KB one: 1 unit.
    expect(writeUnits(plain, undefined, sized(500)).table).toBe(1);
    // A put or delete of a 1.6 KB item: rounded up to 2 KB, 2 units.
    expect(writeUnits(plain, undefined, sized(1.6 * KB)).table).toBe(2);
    expect(writeUnits(plain, sized(1.6 * KB), undefined).table).toBe(2);
    // BatchWriteItem of a 500-byte and a 3.5 KB item: 1 KB + 4 KB = 5 units, not 4 KB (4 units).
    const batch = [sized(500), sized(3.5 * KB)].map((item) => writeUnits(plain, undefined, item).table);
    expect(batch.reduce((a, b) => a + b)).toBe(5);
  });

  it("doubles a transaction's table writes, prepare and commit, but not its index writes", () => {
    // "Managing capacity for transactions": three 500-byte items need 3 x 2 = 6 units.
    const plain = { ...table, indexes: [] };
    const three = [1, 2, 3].map(() => transactionalWriteUnits(plain, undefined, sized(500)).table);
    expect(three.reduce((a, b) => a + b)).toBe(6);
    // The item filed in by-due: the table 1 KB x 2 = 2; the index entry one write, 1.
    expect(transactionalWriteUnits(table, undefined, filed)).toEqual({ table: 2, indexes: 1 });
    // A ConditionCheck writes nothing yet costs 2 per KB of the item checked, at least 2.
    expect(conditionCheckUnits(sized(500))).toEqual({ table: 2, indexes: 0 });
    expect(conditionCheckUnits(sized(1.5 * KB))).toEqual({ table: 4, indexes: 0 });
    expect(conditionCheckUnits(undefined)).toEqual({ table: 2, indexes: 0 });
  });

  it("charges a write refused by its condition the existing item's size, 1 if none, no index", () => {
    // "Capacity units consumed by conditional writes": a 1 KB item, 1 unit; twice that, 2.
    expect(conditionFailedUnits(sized(KB))).toEqual({ table: 1, indexes: 0 });
    expect(conditionFailedUnits(sized(2 * KB))).toEqual({ table: 2, indexes: 0 });
    expect(conditionFailedUnits(undefined)).toEqual({ table: 1, indexes: 0 });
    // Even an item filed in an index: no index entry is written.
    expect(conditionFailedUnits(filed)).toEqual({ table: 1, indexes: 0 });
  });

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
