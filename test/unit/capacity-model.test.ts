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
    // sweep: no run put (a run made is carried by its message until its lease writes it:
    // decision 0051): job update 1 + due-index move 2 (the tenant index holds no field an
    // advance changes); lease: the run's first write 1; completion: run update 1. Reads: the
    // sweep's consistent query of the job's block of runs (1) and its due entry (0.075).
    expect(writeUnitsPerRun(1)).toMatchObject({ sweep: 3, lease: 1, completion: 1, leaseReads: 1 });
    expect(writeUnitsPerRun(1).sweepReads).toBeCloseTo(1.075, 3);
    expect(writeUnitsPerRun(10).sweep).toBe(12); // a 10 KB job item costs 10 WRU to update
    expect(writeUnitsPerRun(10).leaseReads).toBe(3);
  });

  it("works out the hand figures: 16 groups a tick at 2,000 runs/s fire their 500,000 runs in 15.6 s", () => {
    // All of one tenant; a recurring job's firing writes
    // no tenant-index entry; were they one-off jobs, their ends would not either (decision 0047):
    // only creates write it, at most a tenant's creates-per-second quota.
    expect(row(rows, "DynamoDB: tenant-index key").load).toBe(0);
    expect(row(rows, "DynamoDB: tenant-index key, one-off jobs").load).toBe(0);
    expect(row(rows, "DynamoDB: tenant-index key, creates").load).toBe(200);
    expect(row(rows, "DynamoDB: repair-index key").load).toBe(0);
    // A one-off job's run, its job's last, is carried by its message too (decision 0045).
    expect(row(rows, "DynamoDB: repair-index key, one-off jobs").load).toBe(0);
    expect(row(rows, "DynamoDB: due-index shard key").load).toBeCloseTo(125, 0); // 2 x 32,000 / 512
    // A 1M-run second gets the longest lead, 25 s: 20,000 lease requests in 25 s = 800/s, each
    // 150 ms; 1M completions in 60 s, 50 a request = 333/s, each 300 ms.
    expect(row(rows, "Lambda: lease function").load).toBeCloseTo(800 * 0.15 + (1_000_000 / 60 / 50) * 0.3, 0);
    expect(row(rows, "API Gateway (HTTP API)").load).toBeCloseTo(800, 0);
    // The groups take turns (decision 0056): a tick's 16 groups fire their 500,000 runs in the
    // same 15.6 s, at 32,000 runs/s; the other 16 a minute apart.
    expect(row(rows, "DynamoDB table: writes").load).toBeCloseTo(32_000 * 3, 0);
    expect(row(rows, "DynamoDB table: reads").load).toBeCloseTo(Math.max(32_000 * 1.075, 40_000), 0);
    expect(row(rows, "Lambda: sweeper").load).toBe(16);
  });

  it("moves as the design would: more tenants spread the lanes, a Lambda hold fills the concurrency", () => {
    const spread = capacityModel({ ...DEFAULT_INPUTS, tenants: 100 });
    expect(row(spread, "SQS: in-flight messages per lane").ratio).toBeLessThan(1);
    // Decision 0008's hold until the due instant (6 s a request) would need 4,800 + 100.
    const lambdaHold = capacityModel({ ...DEFAULT_INPUTS, leaseHoldMs: 6_000 });
    expect(row(lambdaHold, "Lambda: lease function").load).toBeCloseTo(4_800 + 100, 0);
  });
});
