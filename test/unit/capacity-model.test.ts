import { describe, expect, it } from "vitest";
import { capacityModel, DEFAULT_INPUTS, writeUnitsPerRun } from "../../scripts/capacity-model";

/** The capacity model's arithmetic, against figures worked out by hand (docs/CAPACITY.md). */
const row = (rows: ReturnType<typeof capacityModel>, component: string) => {
  const found = rows.find((r) => r.component === component);
  if (!found) throw new Error(`no row ${component}`);
  return found;
};

describe("the capacity model of a 1M-run spike", () => {
  const rows = capacityModel(DEFAULT_INPUTS);

  it("counts the write units each step issues per run", () => {
    // sweep: run put 1 + repair entry 1 + job update 1 + due-index move 2 + tenant-index 1
    expect(writeUnitsPerRun(1)).toMatchObject({ sweep: 6, lease: 1, completion: 2, leaseReads: 1 });
    expect(writeUnitsPerRun(10).sweep).toBe(15); // a 10 KB job item costs 10 WRU to update
    expect(writeUnitsPerRun(10).leaseReads).toBe(3);
  });

  it("works out the hand figures: 32 groups at 2,000 runs/s fire 1M runs in 15.6 s", () => {
    // 1,000,000 / 15.625 s = 64,000 runs/s, all of one tenant: 64,000 writes/s on one index key.
    expect(row(rows, "DynamoDB: tenant-index key").load).toBeCloseTo(64_000, 0);
    expect(row(rows, "DynamoDB: repair-index key").load).toBeCloseTo(4_000, 0); // 64,000 / 16
    expect(row(rows, "DynamoDB: due-index shard key").load).toBeCloseTo(125, 0); // 2 x 64,000 / 1,024
    // 20,000 lease requests in 5 s = 4,000/s, each held 6 s; 16,667 completions/s x 30 ms.
    expect(row(rows, "Lambda: lease function").load).toBeCloseTo(24_000 + 500, 0);
    expect(row(rows, "API Gateway (HTTP API)").load).toBeCloseTo(16_667, 0);
    expect(row(rows, "DynamoDB table: writes").load).toBeCloseTo(64_000 * 6, 0);
  });

  it("moves as the design would: more tenants spread the tenant index, short holds free the Lambdas", () => {
    const spread = capacityModel({ ...DEFAULT_INPUTS, tenants: 100 });
    expect(row(spread, "DynamoDB: tenant-index key").load).toBeCloseTo(640, 0);
    expect(row(spread, "SQS: in-flight messages per lane").ratio).toBeLessThan(1);
    const workerHold = capacityModel({ ...DEFAULT_INPUTS, leaseHoldMs: 100 });
    expect(row(workerHold, "Lambda: lease function").load).toBeCloseTo(400 + 500, 0);
  });
});
