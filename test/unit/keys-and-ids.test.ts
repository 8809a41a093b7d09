import { describe, expect, it } from "vitest";
import { isJobId, jobIdForIdempotencyKey, newJobId, parseRunId, runIdOf } from "../../lambdas/core/ids";
import {
  allRepairKeys,
  bucketOf,
  dueKeyOf,
  REPAIR_PARTITIONS,
  repairKeyOf,
  SHARD_COUNT,
  SWEEP_GROUP_COUNT,
  shardOf,
  shardsOfGroup,
} from "../../lambdas/core/keys";
import { memoryDeps } from "../support/memory-ports";

describe("shards and buckets", () => {
  it("hashes job ids into 1,024 shards, stably and roughly evenly", () => {
    const deps = memoryDeps(0);
    const counts = new Array<number>(SHARD_COUNT).fill(0);
    for (let i = 0; i < 20_000; i++) {
      const shard = shardOf(newJobId(deps.randomBytes));
      counts[shard] = (counts[shard] ?? 0) + 1;
    }
    expect(counts).toHaveLength(SHARD_COUNT); // an out-of-range shard would have grown the array
    // ~19.5 per shard on average; no shard empty and none more than 3x the mean.
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThan(60);
    // Stability: a fixed id always lands on the same shard (a shard function may never change).
    expect(shardOf("j_00000000000000000000")).toBe(shardOf("j_00000000000000000000"));
  });

  it("cuts time into UTC hours", () => {
    const t = Date.UTC(2026, 10, 29, 21, 59, 59, 999);
    expect(bucketOf(t)).toBe(bucketOf(Date.UTC(2026, 10, 29, 21)));
    expect(bucketOf(t + 1)).toBe(bucketOf(t) + 1);
    expect(dueKeyOf(12, 7)).toBe("12#0007");
  });

  it("splits the shards into groups that cover each shard exactly once", () => {
    const all = Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => shardsOfGroup(g)).flat();
    expect(all).toHaveLength(SHARD_COUNT);
    expect(new Set(all).size).toBe(SHARD_COUNT);
  });

  it("files every run under one of the repair partitions", () => {
    const keys = new Set(allRepairKeys());
    expect(keys.size).toBe(REPAIR_PARTITIONS);
    const deps = memoryDeps(0);
    for (let i = 0; i < 500; i++) expect(keys.has(repairKeyOf(newJobId(deps.randomBytes)))).toBe(true);
  });
});

describe("identifiers", () => {
  it("makes job ids of 20 base-32 characters", () => {
    const id = newJobId(memoryDeps(0).randomBytes);
    expect(id).toMatch(/^j_[0-9a-z]{20}$/);
    expect(isJobId(id)).toBe(true);
    expect(isJobId("j_short")).toBe(false);
    expect(isJobId("x_00000000000000000000")).toBe(false);
  });

  it("derives the same job id from the same tenant and idempotency key, and only then", () => {
    const a = jobIdForIdempotencyKey("tenant-a", "invoice-8812");
    expect(jobIdForIdempotencyKey("tenant-a", "invoice-8812")).toBe(a);
    expect(jobIdForIdempotencyKey("tenant-b", "invoice-8812")).not.toBe(a);
    expect(jobIdForIdempotencyKey("tenant-a", "invoice-8813")).not.toBe(a);
    expect(isJobId(a)).toBe(true);
  });

  it("encodes the job and the scheduled instant in the run id, and reads them back", () => {
    const jobId = "j_0123456789abcdefghjk";
    const at = Date.UTC(2026, 10, 2, 9);
    const runId = runIdOf(jobId, at);
    expect(parseRunId(runId)).toEqual({ jobId, scheduledFor: at });
    expect(parseRunId("r_nonsense")).toBeUndefined();
    expect(parseRunId(`${runId}x`)).toBeUndefined();
    expect(parseRunId("r_0123456789abcdefghjk_99999999999999999")).toBeUndefined();
  });
});
