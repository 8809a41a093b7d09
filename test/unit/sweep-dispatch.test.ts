import { describe, expect, it } from "vitest";
import { bucketOf, bucketStart, groupOf } from "../../lambdas/core/keys";
import type { AheadLedgerMove, SweepMessage } from "../../lambdas/core/ports";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import {
  aheadSliceOf,
  dispatchSweeps,
  MAX_AHEAD_CATCH_UP_BUCKETS,
} from "../../lambdas/core/use-cases/sweep-dispatch";
import { CURSOR_SAFETY_MS, sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { runTick } from "../../lambdas/core/use-cases/tick";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

const NOW = Date.UTC(2026, 10, 2, 8, 30, 0);
const HOUR = 3_600_000;
const caller = { tenant: "t", principal: "p" };
const at = (ms: number) => new Date(ms).toISOString();

/** Counts the ledger's writes: a tick's moves and the sweeps' rewinds. */
function ledgerWrites(deps: MemoryDeps) {
  const writes = { moves: [] as AheadLedgerMove[][], rewinds: 0 };
  const move = deps.jobs.moveAheadLedger.bind(deps.jobs);
  deps.jobs.moveAheadLedger = async (moves) => {
    writes.moves.push([...moves]);
    return move(moves);
  };
  const rewind = deps.jobs.rewindAheadLedger.bind(deps.jobs);
  deps.jobs.rewindAheadLedger = async (group, from) => {
    writes.rewinds += 1;
    await rewind(group, from);
  };
  return writes;
}

async function tickAt(deps: MemoryDeps, now: number, groups: readonly number[]): Promise<SweepMessage[]> {
  deps.clock.set(now);
  await dispatchSweeps(deps, groups, now);
  return deps.sweeps.takeAll();
}

describe("the tick's ahead ledger (decision 0059)", () => {
  it("records all of a tick's groups in one write, and each group's slices follow one another without a gap", async () => {
    const deps = memoryDeps(NOW);
    const writes = ledgerWrites(deps);
    const lookahead = deps.settings.lookaheadSeconds * 1000;
    const first = await tickAt(deps, NOW, [0, 1, 2]);
    expect(writes.moves).toHaveLength(1);
    expect(writes.moves[0]?.map((m) => m.group)).toEqual([0, 1, 2]);
    // A group the ledger never recorded starts an hour back, as the due cursor does.
    expect(first[0]?.ahead).toEqual({
      from: bucketStart(bucketOf(NOW - CURSOR_SAFETY_MS) - 1),
      to: NOW + lookahead,
    });
    const second = await tickAt(deps, NOW + 60_000, [0, 1, 2]);
    expect(writes.moves).toHaveLength(2);
    expect(second.map((m) => m.ahead)).toEqual(
      [0, 1, 2].map(() => ({ from: NOW + lookahead, to: NOW + 60_000 + lookahead })),
    );
  });

  it("a tick that never came leaves no gap: the next one's slice starts where the last recorded one ended", async () => {
    const deps = memoryDeps(NOW);
    const lookahead = deps.settings.lookaheadSeconds * 1000;
    await tickAt(deps, NOW, [4]);
    const [late] = await tickAt(deps, NOW + 10 * 60_000, [4]);
    expect(late?.ahead).toEqual({ from: NOW + lookahead, to: NOW + 10 * 60_000 + lookahead });
  });

  it("a tick whose ledger write is lost after sending has its firings handed out again by the next", async () => {
    const deps = memoryDeps(NOW);
    const lookahead = deps.settings.lookaheadSeconds * 1000;
    await tickAt(deps, NOW, [4]);
    const move = deps.jobs.moveAheadLedger.bind(deps.jobs);
    deps.jobs.moveAheadLedger = async () => {
      throw new Error("killed");
    };
    deps.clock.set(NOW + 60_000);
    await dispatchSweeps(deps, [4], NOW + 60_000);
    expect(deps.sweeps.takeAll().map((m) => m.ahead)).toEqual([
      { from: NOW + lookahead, to: NOW + 60_000 + lookahead },
    ]);
    deps.jobs.moveAheadLedger = move;
    const [again] = await tickAt(deps, NOW + 120_000, [4]);
    expect(again?.ahead?.from).toBe(NOW + lookahead);
  });

  it("a tick whose messages SQS refuses records nothing", async () => {
    const deps = memoryDeps(NOW);
    const writes = ledgerWrites(deps);
    deps.sweeps.dispatch = async () => {
      throw new Error("SQS refused 1 sweep messages");
    };
    await expect(runTick(deps, { turn: 0 })).rejects.toThrow("SQS refused");
    expect(writes.moves).toEqual([]);
    expect(deps.jobs.aheadLedger.size).toBe(0);
  });

  it("a rewind between a tick's read and its write keeps that group where the rewind put it; the others are recorded", async () => {
    const deps = memoryDeps(NOW);
    const lookahead = deps.settings.lookaheadSeconds * 1000;
    await tickAt(deps, NOW, [1, 2]);
    const writes = ledgerWrites(deps);
    // A sweep of group 1's earlier slice fails while the next tick is sending its messages.
    const dispatch = deps.sweeps.dispatch.bind(deps.sweeps);
    deps.sweeps.dispatch = async (messages) => {
      await dispatch(messages);
      await deps.jobs.rewindAheadLedger(1, NOW + 10_000);
    };
    await tickAt(deps, NOW + 60_000, [1, 2]);
    expect(writes.moves.map((moves) => moves.map((m) => m.group))).toEqual([[1, 2], [2]]);
    expect(deps.jobs.aheadLedger.get(1)).toEqual({
      through: NOW + lookahead,
      rewoundTo: NOW + 10_000,
      rewinds: 1,
    });
    expect(deps.jobs.aheadLedger.get(2)).toEqual({ through: NOW + 60_000 + lookahead });
    deps.sweeps.dispatch = dispatch;
    const [one] = await tickAt(deps, NOW + 120_000, [1]);
    expect(one?.ahead).toEqual({ from: NOW + 10_000, to: NOW + 120_000 + lookahead });
    expect(deps.jobs.aheadLedger.get(1)).toEqual({ through: NOW + 120_000 + lookahead, rewinds: 1 });
  });

  it("a sweep of a tick's own slice that fails before the tick's write lands is not erased by that write (the review's race)", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const group = groupOf(jobId);
    await tickAt(deps, NOW, [group]);
    // An earlier sweep failed at R, before the one-off: the group is rewound there.
    const R = runAt - 5 * 60_000;
    await deps.jobs.rewindAheadLedger(group, R);
    // The next tick hands out [R, horizon]. SQS delivers its message at once, and that sweep's
    // send fails (its rewind to runAt finds R already earlier) before the tick's write lands.
    const dispatch = deps.sweeps.dispatch.bind(deps.sweeps);
    deps.sweeps.dispatch = async (messages) => {
      await dispatch(messages);
      deps.queue.failSends = true;
      for (const message of deps.sweeps.takeAll()) await sweepGroup(deps, message.group, message.ahead);
      deps.queue.failSends = false;
    };
    deps.clock.set(runAt - 20_000);
    await dispatchSweeps(deps, [group], runAt - 20_000);
    deps.sweeps.dispatch = dispatch;
    expect(deps.queue.sent).toHaveLength(0);
    // The tick's write failed for the group: its next slice starts at R again, and the run goes.
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(R);
    for (let t = runAt - 15_000; t < runAt; t += 5_000) {
      for (const message of await tickAt(deps, t, [group]))
        await sweepGroup(deps, message.group, message.ahead);
    }
    expect(deps.queue.sent.map((s) => `${s.message.jobId}@${s.message.scheduledFor}`)).toEqual([
      `${jobId}@${runAt}`,
    ]);
  });

  it("a ledger it cannot read still sends every group's sweep, without slices, and records nothing", async () => {
    const deps = memoryDeps(NOW);
    const writes = ledgerWrites(deps);
    deps.jobs.getAheadLedger = async () => {
      throw new Error("throttled");
    };
    await runTick(deps, { turn: 0 });
    const messages = deps.sweeps.takeAll();
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.every((m) => m.ahead === undefined)).toBe(true);
    expect(writes.moves).toEqual([]);
  });

  it("a ledger write that fails does not fail the tick: the repair pass runs, and the next tick hands the firings out again", async () => {
    const deps = memoryDeps(NOW);
    const lookahead = deps.settings.lookaheadSeconds * 1000;
    await tickAt(deps, NOW, [4]);
    const move = deps.jobs.moveAheadLedger.bind(deps.jobs);
    deps.jobs.moveAheadLedger = async () => {
      throw new Error("throttled");
    };
    deps.clock.set(NOW + 60_000);
    await expect(runTick(deps, { turn: 0 })).resolves.toMatchObject({ repair: expect.anything() });
    deps.jobs.moveAheadLedger = move;
    deps.sweeps.takeAll();
    const [again] = await tickAt(deps, NOW + 120_000, [4]);
    expect(again?.ahead?.from).toBe(NOW + lookahead);
  });

  it("an entry that never matches holds back only its own group: after two tries, each group is written alone", async () => {
    const deps = memoryDeps(NOW);
    const lookahead = deps.settings.lookaheadSeconds * 1000;
    await tickAt(deps, NOW, [1, 2]);
    // Group 1's stored entry is not what it reads as (malformed): its condition never holds.
    const move = deps.jobs.moveAheadLedger.bind(deps.jobs);
    deps.jobs.moveAheadLedger = async (moves) => (moves.some((m) => m.group === 1) ? false : move(moves));
    const writes = ledgerWrites(deps);
    await tickAt(deps, NOW + 60_000, [1, 2]);
    expect(writes.moves.map((moves) => moves.map((m) => m.group))).toEqual([[1, 2], [1, 2], [1], [2]]);
    expect(deps.jobs.aheadLedger.get(2)).toEqual({ through: NOW + 60_000 + lookahead });
    expect(deps.jobs.aheadLedger.get(1)?.through).toBe(NOW + lookahead);
  });

  it("a rewind never moves a group forward, and one before the tick's first write is kept", async () => {
    const deps = memoryDeps(NOW);
    await deps.jobs.rewindAheadLedger(3, NOW + 50_000);
    await deps.jobs.rewindAheadLedger(3, NOW + 90_000);
    expect(deps.jobs.aheadLedger.get(3)).toEqual({
      through: NOW + 50_000,
      rewoundTo: NOW + 50_000,
      rewinds: 2,
    });
    const [three] = await tickAt(deps, NOW, [3]);
    expect(three?.ahead?.from).toBe(NOW + 50_000);
  });

  it("after an upgrade, a group starts at decision 0058's cursor; after a long outage, a slice reaches 48 hours on", async () => {
    const deps = memoryDeps(NOW);
    deps.jobs.aheadCursors.set(5, NOW - 30_000);
    const [five, six] = await tickAt(deps, NOW, [5, 6]);
    expect(five?.ahead?.from).toBe(NOW - 30_000);
    expect(six?.ahead?.from).toBe(bucketStart(bucketOf(NOW - CURSOR_SAFETY_MS) - 1));
    const horizon = NOW + 100 * HOUR;
    expect(aheadSliceOf(NOW, horizon)).toEqual({
      from: NOW,
      to: bucketStart(bucketOf(NOW) + MAX_AHEAD_CATCH_UP_BUCKETS + 1),
    });
    expect(aheadSliceOf(NOW + 10_000, NOW)).toEqual({ from: NOW + 10_000, to: NOW + 10_000 });
  });

  it("after an upgrade, an old cursor it cannot read holds back only its group: sent without a slice, not recorded", async () => {
    const deps = memoryDeps(NOW);
    deps.jobs.aheadCursors.set(5, NOW - 30_000);
    deps.jobs.getAheadCursor = async (group) => {
      if (group === 6) throw new Error("throttled");
      return deps.jobs.aheadCursors.get(group);
    };
    const [five, six] = await tickAt(deps, NOW, [5, 6]);
    expect(five?.ahead?.from).toBe(NOW - 30_000);
    expect(six).toEqual({ group: 6, tickAt: NOW });
    expect(deps.jobs.aheadLedger.has(5)).toBe(true);
    expect(deps.jobs.aheadLedger.has(6)).toBe(false);
  });

  it("a sweep message without a slice (from a tick before this version) sends none; the next tick hands it out", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    deps.clock.set(runAt - 20_000);
    await sweepGroup(deps, groupOf(jobId));
    expect(deps.queue.sent).toEqual([]);
    const [message] = await tickAt(deps, runAt - 10_000, [groupOf(jobId)]);
    await sweepGroup(deps, groupOf(jobId), message?.ahead);
    expect(deps.queue.sent.map((s) => s.message.jobId)).toEqual([jobId]);
  });

  it("the tick's messages carry their slices through runTick, its turn's groups only", async () => {
    const deps = memoryDeps(NOW, { sweepEveryTicks: 2 });
    await runTick(deps, { turn: 1 });
    const messages = deps.sweeps.takeAll();
    expect(messages.map((m) => m.group).every((g) => g % 2 === 1)).toBe(true);
    expect(messages.every((m) => m.ahead !== undefined && m.tickAt === NOW)).toBe(true);
    expect([...deps.jobs.aheadLedger.keys()].sort((a, b) => a - b)).toEqual(messages.map((m) => m.group));
  });
});
