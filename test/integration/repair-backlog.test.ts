import { BatchWriteCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { toRunItem } from "../../lambdas/adapters/dynamo/run-item";
import { runMessageOf } from "../../lambdas/core/delivery";
import { newRun } from "../../lambdas/core/lifecycle/creation";
import type { RunMessage } from "../../lambdas/core/ports";
import {
  BUSY_LANE_RECHECK_MS,
  RESENDS_PER_TENANT,
  repairRuns,
} from "../../lambdas/core/use-cases/repair-runs";
import { OffsetClock } from "../support/offset-clock";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * 10,000 runs of a type no worker serves, their messages waiting in their lane, on the real
 * emulators: the repair pass must see that the messages wait (the lane's backlog) instead of
 * re-sending every run every couple of minutes, keep to its time budget, and re-send each run
 * at most once an hour (issue 15).
 */
const RUNS = 10_000;
const MINUTE = 60_000;
const clock = new OffsetClock();
let stack: TestStack;
const resent: string[] = [];

beforeAll(async () => {
  stack = await createTestStack("repair-backlog", { clock });
  const now = clock.now();
  const graceMs = stack.config.settings.repairGraceSeconds * 1000;
  const runs = Array.from({ length: RUNS }, (_, i) =>
    newRun(
      { jobId: `j_backlog${String(i).padStart(11, "0")}`, tenant: "t", type: "unserved" },
      now,
      now,
      graceMs,
      true,
    ),
  );
  for (let i = 0; i < runs.length; i += 25) {
    await stack.db.send(
      new BatchWriteCommand({
        RequestItems: {
          [stack.config.tableName]: runs
            .slice(i, i + 25)
            .map((run) => ({ PutRequest: { Item: toRunItem(run) } })),
        },
      }),
    );
  }
  for (let i = 0; i < runs.length; i += 500) {
    await stack.deps.queue.send(
      runs.slice(i, i + 500).map((run) => ({ message: runMessageOf(run), delaySeconds: 0 })),
    );
  }
  const send = stack.deps.queue.send.bind(stack.deps.queue);
  stack.deps.queue.send = (messages: ReadonlyArray<{ message: RunMessage; delaySeconds: number }>) => {
    resent.push(...messages.map((m) => m.message.runId));
    return send(messages);
  };
}, 300_000);

/** Repair passes, one a minute from `from` on, until every candidate due by then was looked at. */
async function passesFrom(from: number) {
  const totals = { inspected: 0, resent: 0, passes: 0 };
  for (let minute = 0; ; minute++) {
    clock.offsetMs = from + minute * MINUTE - Date.now();
    const stats = await repairRuns(stack.deps);
    totals.inspected += stats.inspected;
    totals.resent += stats.resent;
    totals.passes += 1;
    if (stats.finished && stats.deferred === 0) return totals;
    if (totals.passes > 30) throw new Error("repair did not settle in 30 passes");
  }
}

describe("repair of a backlog of an unserved type", () => {
  it("re-sends none while they wait, then each at most once an hour", async () => {
    const start = clock.now();
    const graceMs = stack.config.settings.repairGraceSeconds * 1000;

    // First check: the lane holds 10,000 waiting messages, so nothing is re-sent.
    const first = await passesFrom(start + graceMs + MINUTE);
    expect(first.resent).toBe(0);
    expect(first.inspected).toBeGreaterThanOrEqual(RUNS);

    // An hour later they are still waiting: each gets one copy, RESENDS_PER_TENANT a pass.
    // (after the first series' last pass, so every run's hour is up)
    const later = await passesFrom(start + graceMs + BUSY_LANE_RECHECK_MS + (first.passes + 1) * MINUTE);
    expect(later.resent).toBe(RUNS);
    expect(new Set(resent).size).toBe(resent.length); // no run twice
    expect(later.passes).toBeGreaterThanOrEqual(RUNS / RESENDS_PER_TENANT);
    // That a pass stops starting work at its budget is test/unit/repair-pass.test.ts's, on a fake
    // clock: wall time here is no assertion (bench:sweep prints a pass's figures).
  }, 600_000);
});
