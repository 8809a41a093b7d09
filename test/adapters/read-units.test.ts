import { describe, expect, it } from "vitest";
import { readUnits, transactionalReadUnits } from "../../lambdas/adapters/dynamo/read-units";

/**
 * DynamoDB's read-unit rules, checked against the worked examples of its documentation: doc
 * pages "DynamoDB read and write operations" (read request units), "Read consistency", "Global
 * secondary indexes: provisioned throughput considerations", "Managing capacity for transactions".
 */
const KB = 1024;
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe("read units by DynamoDB's rules", () => {
  it("rounds a GetItem up to the next 4 KB: 1 unit each strongly consistent, half eventually", () => {
    // A 3.5 KB item reads as 4 KB: 1 unit, or 0.5 eventually consistent.
    expect(readUnits(3.5 * KB, true)).toBe(1);
    expect(readUnits(3.5 * KB, false)).toBe(0.5);
    // A 10 KB item reads as 12 KB: 3 units, or 1.5.
    expect(readUnits(10 * KB, true)).toBe(3);
    expect(readUnits(10 * KB, false)).toBe(1.5);
    // An 8 KB item: 2 units strongly consistent, 1 eventually.
    expect(readUnits(8 * KB, true)).toBe(2);
    expect(readUnits(8 * KB, false)).toBe(1);
  });

  it("still charges a read that finds nothing: 1 unit strongly consistent, 0.5 eventually", () => {
    expect(readUnits(0, true)).toBe(1);
    expect(readUnits(0, false)).toBe(0.5);
  });

  it("rounds a BatchGetItem per item, a Query once over the sum", () => {
    // BatchGetItem of a 1.5 KB and a 6.5 KB item: 4 KB + 8 KB = 12 KB, 3 units, not 8 KB (2 units).
    expect(sum([1.5 * KB, 6.5 * KB].map((size) => readUnits(size, true)))).toBe(3);
    expect(readUnits(1.5 * KB + 6.5 * KB, true)).toBe(2);
    // A Query whose 10 items total 40.8 KB reads 44 KB: 11 units.
    expect(readUnits(40.8 * KB, true)).toBe(11);
    // 80 KB read eventually consistent: 80 / 4 / 2 = 10 units.
    expect(readUnits(80 * KB, false)).toBe(10);
  });

  it("sizes an index query by its entries: eight 2,000-byte entries are 2 units", () => {
    // 8 x 2,000 = 16,000 bytes, rounded up to 16 KB; eventually consistent: 0.5 x 16 / 4 = 2.
    expect(readUnits(8 * 2_000, false)).toBe(2);
  });

  it("reads a transaction's items twice, prepare and commit", () => {
    // Three 500-byte items: 3 x 2 = 6 units; an 8 KB item: 4 units.
    expect(sum([500, 500, 500].map(transactionalReadUnits))).toBe(6);
    expect(transactionalReadUnits(8 * KB)).toBe(4);
    expect(transactionalReadUnits(0)).toBe(2);
  });
});
