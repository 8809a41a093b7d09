import type { SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import { groupOf, groupsOfTurn, SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import {
  isLaneJanitorMinute,
  LANE_JANITOR_BUDGET_MS,
  LANE_JANITOR_MINUTE,
  retireIdleLanes,
} from "../../lambdas/core/use-cases/retire-idle-lanes";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { runTick } from "../../lambdas/core/use-cases/tick";
import { CLOUD_SETTINGS, type SchedulerSettings } from "../../lambdas/definitions/settings";
import { createSweepHandler } from "../../lambdas/handlers/sweep";
import { turnOfTickEvent } from "../../lambdas/handlers/tick";
import { localContext } from "../../local/lambda-context";
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

  it("sweeps each group every sweepEveryTicks ticks, the groups taking turns (decision 0056)", async () => {
    const deps = memoryDeps(NOW, { tickSeconds: 60, sweepEveryTicks: 2, lookaheadSeconds: 150 });
    const swept: number[][] = [];
    for (let tick = 0; tick < 4; tick++) {
      // EventBridge fires a few seconds into its minute; a repeat within the minute is the same turn.
      deps.clock.set(NOW + tick * 60_000 + 7_000);
      await runTick(deps);
      swept.push([...(deps.sweeps.dispatched.at(-1) ?? [])]);
    }
    deps.clock.set(NOW + 3 * 60_000 + 59_000);
    await runTick(deps);
    expect(deps.sweeps.dispatched.at(-1)).toEqual(swept[3]);
    // Each tick sweeps half the groups; two ticks in a row sweep every group once.
    expect(swept.map((groups) => groups.length)).toEqual([16, 16, 16, 16]);
    expect([...(swept[0] ?? []), ...(swept[1] ?? [])].sort((a, b) => a - b)).toEqual(
      Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g),
    );
    expect(swept[2]).toEqual(swept[0]);
    expect(swept[3]).toEqual(swept[1]);
  });

  it("reads the turn from the tick rule's event, and none from anything else", () => {
    expect(turnOfTickEvent({ turn: 1 })).toBe(1);
    expect(turnOfTickEvent({ turn: 0 })).toBe(0);
    for (const other of [
      {},
      { turn: "1" },
      { turn: -1 },
      { turn: 0.5 },
      null,
      { "detail-type": "Scheduled Event" },
    ])
      expect(turnOfTickEvent(other)).toBeUndefined();
  });

  it("sweeps the turn its rule names, not the clock's: a late tick and the next one in the same minute sweep both turns", async () => {
    const deps = memoryDeps(NOW, { tickSeconds: 60, sweepEveryTicks: 2, lookaheadSeconds: 150 });
    const everyGroup = Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g);
    // Minute 0's tick delivered late, at 09:01:00.5, then minute 1's on time at 09:01:02.
    const late = async (turn: number | undefined, at: number) => {
      deps.clock.set(at);
      await runTick(deps, { turn });
      return [...(deps.sweeps.dispatched.at(-1) ?? [])];
    };
    const named = [...(await late(0, NOW + 60_500)), ...(await late(1, NOW + 62_000))];
    expect(named.sort((a, b) => a - b)).toEqual(everyGroup);
    // From the clock alone both would be minute 1's turn, and minute 0's groups would wait.
    const fromClock = [await late(undefined, NOW + 60_500), await late(undefined, NOW + 62_000)];
    expect(fromClock[0]).toEqual(fromClock[1]);
  });

  it("with the cloud's timing, makes every run visible its lead before it is due, though each group is swept every other tick", async () => {
    const cloud = { tickSeconds: 60, sweepEveryTicks: 2, lookaheadSeconds: CLOUD_SETTINGS.lookaheadSeconds };
    // Where lookahead is no longer than a group's period, some run is sent too late.
    expect(await latestVisibility(cloud)).toBeLessThanOrEqual(-DELIVERY_LEAD_SECONDS * 1000);
    expect(await latestVisibility({ ...cloud, lookaheadSeconds: 90 })).toBeGreaterThan(
      -DELIVERY_LEAD_SECONDS * 1000,
    );
  });

  it("gives every group a turn whatever the period", () => {
    for (const every of [1, 2, 3, 5]) {
      const seen = new Map<number, number>();
      for (let tick = 0; tick < every; tick++)
        for (const g of groupsOfTurn(tick, every)) seen.set(g, (seen.get(g) ?? 0) + 1);
      expect([...seen.keys()].sort((a, b) => a - b)).toEqual(
        Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g),
      );
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
    }
  });
});

/**
 * One-off jobs created 20 minutes ahead, one every 7 s over 7 minutes (so in every group and
 * every phase of the ticks), swept as the ticks would sweep them (each tick a few seconds into
 * its minute): the latest any run's message becomes visible, relative to its due time.
 */
async function latestVisibility(timing: Partial<SchedulerSettings>): Promise<number> {
  const deps = memoryDeps(NOW, timing);
  const caller = { tenant: "t1", principal: "p" } as const;
  for (let k = 0; k < 60; k++)
    await createJob(deps, caller, {
      type: "far",
      runAt: new Date(NOW + 20 * 60_000 + k * 7_000).toISOString(),
    });
  let latest = Number.NEGATIVE_INFINITY;
  for (let minute = 15; minute <= 30; minute++) {
    deps.clock.set(NOW + minute * 60_000 + 4_000);
    const before = deps.queue.sent.length;
    await runTick(deps);
    for (const message of deps.sweeps.takeAll()) await sweepGroup(deps, message.group, message.ahead);
    for (const { message, delaySeconds } of deps.queue.sent.slice(before))
      latest = Math.max(latest, deps.clock.now() + delaySeconds * 1000 - message.scheduledFor);
  }
  expect(deps.queue.sent.length).toBe(60);
  return latest;
}

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
      localContext("sweeper"),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: "m1" }] });
  });

  it("starts no batch of one-offs made ahead in its function's last seconds: the group is rewound to them, the message answered", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + 3_600_000;
    const { jobId } = await createJob(
      deps,
      { tenant: "t1", principal: "p" },
      {
        type: "x",
        runAt: new Date(runAt).toISOString(),
      },
    );
    const group = groupOf(jobId);
    deps.clock.set(runAt - 20_000);
    await runTick(deps, { turn: 0 });
    const message = deps.sweeps.takeAll().find((m) => m.group === group);
    const handler = createSweepHandler(deps);
    const lastSeconds = { ...localContext("sweeper"), getRemainingTimeInMillis: () => 9_000 };
    expect(await handler(event(JSON.stringify(message)), lastSeconds)).toEqual({ batchItemFailures: [] });
    expect(deps.queue.sent).toEqual([]);
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(runAt);
    // With its time, the same message sends it.
    expect(await handler(event(JSON.stringify(message)), localContext("sweeper"))).toEqual({
      batchItemFailures: [],
    });
    expect(deps.queue.sent.map((s) => s.message.jobId)).toEqual([jobId]);
  });

  it("drops malformed messages instead of retrying them forever", async () => {
    const deps = memoryDeps(NOW);
    const handler = createSweepHandler(deps);
    const result = await handler(
      event("not json", JSON.stringify({ group: 9999, tickAt: 1 }), "{}"),
      localContext("sweeper"),
    );
    expect(result).toEqual({ batchItemFailures: [] });
    expect(deps.warnings).toHaveLength(3);
  });
});

describe("the hourly idle-lane pass", () => {
  const DAY = 86_400_000;
  const atMinute = (minute: number) => Date.UTC(2026, 10, 2, 9, minute, 0);

  it("runs in the tick of minute LANE_JANITOR_MINUTE only, with the idle cut-off idleLaneDays back", async () => {
    for (let minute = 0; minute < 60; minute++) {
      const deps = memoryDeps(atMinute(minute), { idleLaneDays: 3 });
      const result = await runTick(deps);
      const ran = minute === LANE_JANITOR_MINUTE;
      expect(deps.queue.retireCalls).toEqual(
        ran
          ? [
              {
                idleBefore: atMinute(minute) - 3 * DAY,
                now: atMinute(minute),
                budgetMs: LANE_JANITOR_BUDGET_MS,
              },
            ]
          : [],
      );
      expect(result.lanes !== undefined).toBe(ran);
      expect(isLaneJanitorMinute(atMinute(minute))).toBe(ran);
    }
  });

  it("keeps every lane when idleLaneDays is 0", async () => {
    const deps = memoryDeps(atMinute(LANE_JANITOR_MINUTE), { idleLaneDays: 0 });
    expect(await retireIdleLanes(deps)).toBeUndefined();
    expect(deps.queue.retireCalls).toEqual([]);
  });

  it("gives a deleted lane's type back only when no active or paused job of the tenant has it", async () => {
    const deps = memoryDeps(atMinute(LANE_JANITOR_MINUTE), { tenantMaxJobTypes: 10 });
    const caller = { tenant: "t1", principal: "p" } as const;
    const runAt = new Date(atMinute(LANE_JANITOR_MINUTE) + DAY).toISOString();
    const paused = await createJob(deps, caller, { type: "paused", runAt });
    await controlJob(deps, caller, paused.jobId, "pause");
    const cancelled = await createJob(deps, caller, { type: "cancelled", runAt });
    await controlJob(deps, caller, cancelled.jobId, "cancel");
    await createJob(deps, { tenant: "t2", principal: "q" }, { type: "cancelled", runAt });
    deps.queue.idleLanes = [
      { tenant: "t1", type: "paused" },
      { tenant: "t1", type: "cancelled" },
    ];

    const result = await retireIdleLanes(deps);

    expect(result?.retired).toHaveLength(2);
    expect([...(deps.quotas.types.get("t1") ?? [])]).toEqual(["paused"]);
    expect([...(deps.quotas.types.get("t2") ?? [])]).toEqual(["cancelled"]);
  });

  it("never fails the tick: a failing pass is logged, and a failing type release skips that type", async () => {
    const deps = memoryDeps(atMinute(LANE_JANITOR_MINUTE));
    deps.queue.retireIdleLanes = async () => {
      throw new Error("SQS unavailable");
    };
    const result = await runTick(deps);
    expect(result.lanes).toBeUndefined();
    expect(deps.warnings).toContain("idle-lane pass failed");

    const again = memoryDeps(atMinute(LANE_JANITOR_MINUTE));
    again.queue.idleLanes = [
      { tenant: "t1", type: "a" },
      { tenant: "t1", type: "b" },
    ];
    let released = 0;
    again.quotas.releaseType = async (_tenant, type) => {
      if (type === "a") throw new Error("throttled");
      released += 1;
      return true;
    };
    const passed = await retireIdleLanes(again);
    expect(passed?.retired).toHaveLength(2);
    expect(released).toBe(1);
    expect(again.warnings).toContain("could not give a job type back to its tenant's quota");
  });
});
