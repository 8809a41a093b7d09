import type { SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import { runTick } from "../../lambdas/core/use-cases/tick";
import { createSweepHandler } from "../../lambdas/handlers/sweep";
import { memoryDeps } from "../support/memory-ports";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const event = (...bodies: string[]): SQSEvent => ({
  Records: bodies.map((body, i) => ({ messageId: `m${i}`, body }) as SQSEvent["Records"][number]),
});

describe("the tick", () => {
  it("fans out one sweep message per shard group and runs the repair pass", async () => {
    const deps = memoryDeps(NOW);
    const result = await runTick(deps);
    expect(deps.sweeps.dispatched).toEqual([Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g)]);
    expect(result).toMatchObject({ groups: SWEEP_GROUP_COUNT, repair: { inspected: 0 } });
  });
});

describe("the sweeper", () => {
  it("sweeps each group it is sent and reports only the failed ones for retry", async () => {
    const deps = memoryDeps(NOW);
    const query = deps.jobs.queryDue.bind(deps.jobs);
    deps.jobs.queryDue = async (dueKey: string, before: number) => {
      if (dueKey.endsWith("#0040")) throw new Error("throttled"); // shard 40 is in group 1
      return query(dueKey, before);
    };
    const handler = createSweepHandler(deps);
    const result = await handler(
      event(JSON.stringify({ group: 0, tickAt: NOW }), JSON.stringify({ group: 1, tickAt: NOW })),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: "m1" }] });
  });

  it("drops malformed messages instead of retrying them forever", async () => {
    const deps = memoryDeps(NOW);
    const handler = createSweepHandler(deps);
    const result = await handler(event("not json", JSON.stringify({ group: 9999, tickAt: 1 }), "{}"));
    expect(result).toEqual({ batchItemFailures: [] });
    expect(deps.warnings).toHaveLength(3);
  });
});
