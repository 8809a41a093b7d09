import { describe, expect, it } from "vitest";
import { leadSecondsFor, requestTagOf } from "../../lambdas/core/delivery";
import { aheadKeyOf, bucketOf, groupOf, SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import { PAUSED_RUN_REASON, RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { listJobs } from "../../lambdas/core/use-cases/list-jobs";
import { MADE_AHEAD_BEYOND_MS } from "../../lambdas/core/use-cases/one-off-with-run";
import { dispatchSweeps } from "../../lambdas/core/use-cases/sweep-dispatch";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { watchJobWrites } from "../support/job-writes";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";
import { handOutSlices, tickSweep } from "../support/tick-sweeps";

const NOW = Date.UTC(2026, 10, 2, 8, 30, 0);
const HOUR = 3_600_000;
const caller = { tenant: "t", principal: "p" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };
const at = (ms: number) => new Date(ms).toISOString();
const lease = (deps: MemoryDeps) => leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });

/** The writes a job item takes after its create (the sweep's way writes one to send its run). */
function jobWrites(deps: MemoryDeps): string[] {
  return watchJobWrites(deps.jobs, ["completeJob", "replaceJob", "advanceJob", "closeCancelledJob"]);
}

/**
 * SQS refuses each batch whose first firing `failAfter` names (after that many ms) until the
 * returned `heal()`; the others go.
 */
function failBatches(deps: MemoryDeps, failAfter: (firstFiring: number | undefined) => number | undefined) {
  const send = deps.queue.send.bind(deps.queue);
  let failing = true;
  deps.queue.send = async (messages) => {
    const wait = failing ? failAfter(messages[0]?.message.scheduledFor) : undefined;
    if (wait !== undefined) {
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
      throw new Error("queue unavailable");
    }
    await send(messages);
  };
  return {
    heal: () => {
      failing = false;
    },
  };
}

/**
 * `count` one-offs made ahead of one group (the first one's), the i-th firing at `firingOf(i)`:
 * the jobs created for other groups are dropped. The group.
 */
async function oneOffsOfOneGroup(deps: MemoryDeps, count: number, firingOf: (i: number) => number) {
  const group = groupOf((await createJob(deps, caller, { type: "x", runAt: at(firingOf(0)) })).jobId);
  let made = 1;
  for (let tries = 0; made < count; tries++) {
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(firingOf(made)) });
    if (groupOf(jobId) === group) made += 1;
    else deps.jobs.jobs.delete(jobId);
    if (tries > 100_000) throw new Error("no jobs of the group");
  }
  return group;
}

/** Sweeps the job's group at every tick (the local timing: every group, each tick) from `from` to `to`. */
async function sweepEachTick(deps: MemoryDeps, jobId: string, from: number, to: number) {
  for (let t = from; t <= to; t += deps.settings.tickSeconds * 1000) {
    deps.clock.set(t);
    await tickSweep(deps, groupOf(jobId));
  }
}

describe("a one-off made ahead at create (decision 0058)", () => {
  it("is stored made and filed under its group's ahead key, with nothing sent; its view shows its next run", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + 2 * HOUR;
    const created = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    expect(Date.parse(created.nextRunAt ?? "")).toBe(runAt);
    expect(deps.queue.sent).toEqual([]);
    expect(deps.jobs.jobs.get(created.jobId)).toMatchObject({
      nextRunAt: undefined,
      lastFiringAt: runAt,
      madeAheadAt: runAt,
      dueKey: aheadKeyOf(bucketOf(runAt), groupOf(created.jobId)),
    });
    const view = await getJob(deps, caller, created.jobId);
    expect(view).toMatchObject({ status: "active", runs: [] });
    expect(Date.parse(String(view.nextRunAt))).toBe(runAt);
    // Still unsent 10 minutes before (no sweep ran: its group's tick stopped, say), it is shown
    // as a next run still, so an export moves it; sent, as one made at create: its run, pending,
    // in its history.
    deps.clock.set(runAt - 10 * 60_000);
    expect(Date.parse(String((await getJob(deps, caller, created.jobId)).nextRunAt))).toBe(runAt);
    deps.clock.set(runAt - 20_000);
    await tickSweep(deps, groupOf(created.jobId));
    expect(deps.queue.sent).toHaveLength(1);
    const near = await getJob(deps, caller, created.jobId);
    expect(near.nextRunAt).toBeUndefined();
    expect(near.runs).toMatchObject([{ status: "pending" }]);
  });

  it("is sent once, by the first sweep that reaches it, its job never written; it runs once and the job ends", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR + 30_000;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const writes = jobWrites(deps);
    const reach = deps.settings.lookaheadSeconds * 1000;
    await sweepEachTick(deps, jobId, NOW, runAt - reach - 1);
    expect(deps.queue.sent).toEqual([]);
    await sweepEachTick(deps, jobId, runAt - reach, runAt + 5 * 60_000);
    expect(deps.queue.sent).toHaveLength(1);
    const [sent] = deps.queue.sent;
    expect(sent?.message).toMatchObject({ jobId, scheduledFor: runAt, final: true });
    expect(sent?.message.madeAt).toBeDefined(); // made, not written (decision 0051)
    expect(deps.jobs.aheadLedger.get(groupOf(jobId))?.through).toBeGreaterThan(runAt);
    expect(writes).toEqual([]);

    deps.clock.set(runAt);
    deps.queue.deliverAll();
    const [granted] = await lease(deps);
    if (!granted) throw new Error("not leased");
    await completeRun(deps, worker, granted.runId, { fence: granted.fence, result: "succeeded" });
    expect(knownRunsOf(deps, jobId)).toMatchObject([{ status: RunStatus.Succeeded, attempt: 1 }]);
    expect(await shownStatus(deps, jobId)).toBe("completed");
    expect(writes).toEqual([]);
  });

  it("sends it with the lead of its second: a dense second's runs earlier than a lone run's", async () => {
    const deps = memoryDeps(NOW, { leasesPerSecond: 10 });
    const runAt = NOW + HOUR;
    const ids: string[] = [];
    for (let i = 0; i < 400; i++)
      ids.push((await createJob(deps, caller, { type: "x", runAt: at(runAt) })).jobId);
    const lone = await createJob(deps, caller, { type: "x", runAt: at(runAt + 5_000) });
    const group = groupOf(lone.jobId);
    expect(ids.filter((id) => groupOf(id) === group).length).toBeGreaterThan(0);
    deps.clock.set(runAt - 20_000);
    await tickSweep(deps, group);
    const delays = new Map(deps.queue.sent.map((s) => [s.message.scheduledFor, s.delaySeconds]));
    // A lone run shows the lead of a second with one run a group; the dense second's, a longer lead.
    const loneDelay = delays.get(runAt + 5_000) ?? Number.NaN;
    expect(loneDelay).toBe(25 - leadSecondsFor(SWEEP_GROUP_COUNT, 10));
    expect(delays.get(runAt)).toBeLessThan(loneDelay - 5);
  });

  it("a paused one's run is sent still, and its lease records the firing missed in the pause", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    await controlJob(deps, caller, jobId, "pause");
    await sweepEachTick(deps, jobId, runAt - 5 * 60_000, runAt);
    expect(deps.queue.sent.map((s) => s.message.scheduledFor)).toEqual([runAt]);
    deps.queue.deliverAll();
    expect(await lease(deps)).toEqual([]);
    expect(knownRunsOf(deps, jobId)).toMatchObject([{ status: RunStatus.Missed, error: PAUSED_RUN_REASON }]);
  });

  it("resumed before its time, it runs at its time", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    await controlJob(deps, caller, jobId, "pause");
    deps.clock.set(NOW + 60_000);
    await controlJob(deps, caller, jobId, "resume");
    await sweepEachTick(deps, jobId, runAt - 5 * 60_000, runAt);
    deps.queue.deliverAll();
    expect((await lease(deps)).map((l) => l.jobId)).toEqual([jobId]);
  });

  it("cancelled, nothing is sent and its firing is recorded cancelled", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    await controlJob(deps, caller, jobId, "cancel");
    await sweepEachTick(deps, jobId, runAt - 5 * 60_000, runAt);
    expect(deps.queue.sent).toEqual([]);
    expect(knownRunsOf(deps, jobId)).toMatchObject([{ status: RunStatus.Cancelled }]);
    expect(await shownStatus(deps, jobId)).toBe("cancelled");
  });

  it("moved to another time, the old firing is superseded and never sent; the new one runs once", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const movedTo = NOW + 2 * HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    await updateJob(deps, caller, jobId, { runAt: at(movedTo) }, undefined);
    await sweepEachTick(deps, jobId, runAt - 5 * 60_000, movedTo);
    expect(deps.queue.sent.map((s) => s.message.scheduledFor)).toEqual([movedTo]);
    deps.queue.deliverAll();
    expect((await lease(deps)).map((l) => l.scheduledFor)).toEqual([at(movedTo).replace(".000", "")]);
  });

  it("a sweep whose send fails rewinds its group to that run: the next tick hands it out again", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const group = groupOf(jobId);
    await sweepEachTick(deps, jobId, runAt - 10 * 60_000, runAt - 3 * 60_000);
    deps.queue.failSends = true;
    deps.clock.set(runAt - 20_000);
    // The message is done with (SQS does not retry it): the ledger says where to start again.
    expect((await tickSweep(deps, group)).failedShards).toBe(0);
    expect(deps.jobs.aheadLedger.get(group)).toEqual({
      through: runAt - 20_000 + deps.settings.lookaheadSeconds * 1000,
      rewoundTo: runAt,
      rewinds: 1,
    });
    // Listed with its next run again until it goes (an export taken now carries it).
    expect(Date.parse(String((await getJob(deps, caller, jobId)).nextRunAt))).toBe(runAt);
    deps.queue.failSends = false;
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    expect(deps.queue.sent.map((s) => s.message.scheduledFor)).toEqual([runAt]);
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBeUndefined();
  });

  it("a sweep that cannot read its slice rewinds its group to the slice's start: the next tick hands it all out again", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const group = groupOf(jobId);
    const query = deps.jobs.queryAhead.bind(deps.jobs);
    deps.jobs.queryAhead = async () => {
      throw new Error("throttled");
    };
    deps.clock.set(runAt - 20_000);
    await dispatchSweeps(deps, [group], deps.clock.now());
    const [message] = deps.sweeps.takeAll();
    expect((await sweepGroup(deps, group, message?.ahead)).failedShards).toBe(0);
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(message?.ahead?.from);
    deps.jobs.queryAhead = query;
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    expect(deps.queue.sent.map((s) => s.message.jobId)).toEqual([jobId]);
  });

  it("a rewind that cannot be written fails the sweep's message, so SQS hands the whole slice out again", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const group = groupOf(jobId);
    deps.queue.failSends = true;
    deps.jobs.rewindAheadLedger = async () => {
      throw new Error("throttled");
    };
    deps.clock.set(runAt - 20_000);
    await dispatchSweeps(deps, [group], deps.clock.now());
    const [message] = deps.sweeps.takeAll();
    if (!message?.ahead) throw new Error("no slice");
    expect((await sweepGroup(deps, group, message.ahead)).failedShards).toBe(1);
    // SQS redelivers the same message: the same slice, sent this time.
    deps.queue.failSends = false;
    await sweepGroup(deps, group, message.ahead);
    expect(deps.queue.sent.map((s) => s.message.scheduledFor)).toEqual([runAt]);
  });

  it("found late after an outage: run late by catch-up, recorded missed by skip (its job ends unwritten)", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const caught = await createJob(deps, caller, { type: "x", runAt: at(runAt), missedRuns: "catch-up" });
    const skipped = await createJob(deps, caller, { type: "x", runAt: at(runAt), missedRuns: "skip" });
    deps.clock.set(runAt - 10 * 60_000);
    await tickSweep(deps, groupOf(caught.jobId));
    await tickSweep(deps, groupOf(skipped.jobId));
    // Down for half an hour past their time.
    deps.clock.set(runAt + 30 * 60_000);
    await tickSweep(deps, groupOf(caught.jobId));
    await tickSweep(deps, groupOf(skipped.jobId));
    expect(deps.queue.sent.map((s) => s.message.jobId)).toEqual([caught.jobId]);
    expect(knownRunsOf(deps, skipped.jobId)).toMatchObject([{ status: RunStatus.Missed }]);
    expect(await shownStatus(deps, skipped.jobId)).toBe("completed");
  });

  it("a keyed one's run carries its stored request's tag; a retry of the create answers the stored job", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const body = { type: "x", runAt: at(runAt), idempotencyKey: "ahead-1" };
    const first = await createJob(deps, caller, body);
    const again = await createJob(deps, caller, body);
    expect(again).toMatchObject({ created: false, jobId: first.jobId });
    expect(Date.parse(again.nextRunAt ?? "")).toBe(runAt);
    await sweepEachTick(deps, first.jobId, runAt - 5 * 60_000, runAt);
    const stored = await deps.jobs.getJob(first.jobId);
    if (!stored) throw new Error("no job");
    expect(deps.queue.sent.map((s) => s.message.request)).toEqual([requestTagOf(stored)]);
  });

  it("is made only beyond SQS's longest delay and the cursor's margin, whatever the lookahead; nearer, the due index's way", async () => {
    for (const lookaheadSeconds of [30, 150, 900]) {
      const deps = memoryDeps(NOW, { lookaheadSeconds });
      const beyond = NOW + MADE_AHEAD_BEYOND_MS;
      const near = await createJob(deps, caller, { type: "x", runAt: at(beyond - 1_000) });
      const far = await createJob(deps, caller, { type: "x", runAt: at(beyond) });
      const nearJob = await deps.jobs.getJob(near.jobId);
      expect(nearJob?.nextRunAt).toBe(beyond - 1_000);
      expect(nearJob?.madeAheadAt).toBeUndefined();
      expect(await deps.jobs.getJob(far.jobId)).toMatchObject({ nextRunAt: undefined, madeAheadAt: beyond });
    }
    expect(MADE_AHEAD_BEYOND_MS).toBe(17 * 60_000);
    // During an upgrade's first deploy (runs written when made), the due index's way.
    const upgrading = memoryDeps(NOW, { writeRunsWhenMade: 1 });
    const kept = await createJob(upgrading, caller, { type: "x", runAt: at(NOW + 2 * HOUR) });
    expect(await upgrading.jobs.getJob(kept.jobId)).toMatchObject({ nextRunAt: NOW + 2 * HOUR });
  });

  it("an entry the index still shows for a job that moved is read in the table and not sent", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    await updateJob(deps, caller, jobId, { runAt: at(runAt + HOUR) }, undefined);
    // The index lags the job's write: it still shows the old entry.
    const query = deps.jobs.queryAhead.bind(deps.jobs);
    deps.jobs.queryAhead = async (key, from, before) => {
      const page = await query(key, from, before);
      const stale = { jobId, at: runAt };
      return from <= runAt && runAt < before && key === aheadKeyOf(bucketOf(runAt), groupOf(jobId))
        ? { ...page, items: [...page.items, stale] }
        : page;
    };
    deps.clock.set(runAt - 20_000);
    await tickSweep(deps, groupOf(jobId));
    expect(deps.queue.sent).toEqual([]);
  });

  it("a batch that fails in a dense slice rewinds the group to that batch's first firing, and the next tick sends from there", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const group = groupOf((await createJob(deps, caller, { type: "x", runAt: at(runAt) })).jobId);
    // Jobs of that group, 5 ms apart: many batches.
    let made = 1;
    for (let i = 1; made < 300; i++) {
      const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt + made * 5) });
      if (groupOf(jobId) === group) made += 1;
      else deps.jobs.jobs.delete(jobId);
      if (i > 100_000) throw new Error("no jobs of the group");
    }
    const failFrom = runAt + 200 * 5;
    const sqs = failBatches(deps, (first) => (first === failFrom ? 0 : undefined));
    deps.clock.set(runAt - 20_000);
    await tickSweep(deps, group);
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(failFrom);
    expect(new Set(deps.queue.sent.map((m) => m.message.scheduledFor)).size).toBe(290);
    sqs.heal();
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    // Every firing sent; those after the failed batch twice (a run sent twice is one run).
    const sent = deps.queue.sent.map((m) => m.message.scheduledFor);
    expect(new Set(sent).size).toBe(300);
    expect(sent.filter((t) => t < failFrom)).toHaveLength(200);
  });

  it("a slice denser than a sweep reads is sent in parts: the rest, from a whole firing, with the next slice", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const first = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const group = groupOf(first.jobId);
    // 30 of the group's one-offs: 10 at each of three instants.
    const firings = [runAt, runAt + 1_000, runAt + 2_000];
    let made = 1;
    for (let i = 0; made < 30; i++) {
      const { jobId } = await createJob(deps, caller, {
        type: "x",
        runAt: at(firings[Math.floor(made / 10)] ?? 0),
      });
      if (groupOf(jobId) === group) made += 1;
      else deps.jobs.jobs.delete(jobId);
      if (i > 20_000) throw new Error("no jobs of the group");
    }
    deps.clock.set(runAt - 20_000);
    await dispatchSweeps(deps, [group], deps.clock.now());
    const [message] = deps.sweeps.takeAll();
    // A limit of 15 cuts inside the second instant: its 5 taken are left for the next slice.
    await sweepGroup(deps, group, message?.ahead, { limit: 15 });
    expect(deps.queue.sent.map((s) => s.message.scheduledFor)).toEqual(Array(10).fill(runAt));
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(runAt + 1_000);
    // One instant denser than the limit: that instant whole, the rest from the next millisecond.
    deps.clock.set(runAt - 15_000);
    await dispatchSweeps(deps, [group], deps.clock.now());
    const [next] = deps.sweeps.takeAll();
    expect(next?.ahead?.from).toBe(runAt + 1_000);
    await sweepGroup(deps, group, next?.ahead, { limit: 5 });
    expect(deps.queue.sent.slice(10).map((s) => s.message.scheduledFor)).toEqual(
      Array(10).fill(runAt + 1_000),
    );
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(runAt + 1_001);
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    const sent = deps.queue.sent.map((s) => `${s.message.jobId}@${s.message.scheduledFor}`);
    expect(sent).toHaveLength(30);
    expect(new Set(sent).size).toBe(30);
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBeUndefined();
  });

  it("two batches that fail rewind the group to the earlier's first firing, whichever fails first", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const group = await oneOffsOfOneGroup(deps, 300, (i) => runAt + i * 5);
    // The later batch fails first: its send is answered at once, the earlier one's after a wait.
    const early = runAt + 50 * 5;
    const late = runAt + 200 * 5;
    const sqs = failBatches(deps, (first) => (first === early ? 20 : first === late ? 0 : undefined));
    deps.clock.set(runAt - 20_000);
    await tickSweep(deps, group);
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(early);
    sqs.heal();
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    expect(new Set(deps.queue.sent.map((m) => m.message.scheduledFor)).size).toBe(300);
  });

  it("a slice cut at the sweep's limit whose send also fails before the cut rewinds to the failed batch, not the cut", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const group = await oneOffsOfOneGroup(deps, 60, (i) => runAt + i * 5);
    const failFrom = runAt + 10 * 5;
    const sqs = failBatches(deps, (first) => (first === failFrom ? 0 : undefined));
    deps.clock.set(runAt - 20_000);
    const [message] = await handOutSlices(deps, [group]);
    // A limit of 40: the rest from the 41st firing, and the second batch (firings 11-20) fails.
    await sweepGroup(deps, group, message?.ahead, { limit: 40 });
    expect(deps.jobs.aheadLedger.get(group)?.rewoundTo).toBe(failFrom);
    sqs.heal();
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    expect(new Set(deps.queue.sent.map((m) => m.message.scheduledFor)).size).toBe(60);
  });

  it("a sweep whose time runs out part way rewinds to the first batch it did not start; the next tick sends the rest", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const group = await oneOffsOfOneGroup(deps, 300, (i) => runAt + i * 5);
    deps.clock.set(runAt - 20_000);
    const start = deps.clock.now();
    // Each send takes a second of the sweep's time; it has 3 s left before its budget.
    const send = deps.queue.send.bind(deps.queue);
    deps.queue.send = async (messages) => {
      deps.clock.set(deps.clock.now() + 1_000);
      await send(messages);
    };
    const [message] = await handOutSlices(deps, [group]);
    await sweepGroup(deps, group, message?.ahead, { sendUntil: start + 3_000 });
    const sentFirst = new Set(deps.queue.sent.map((m) => m.message.scheduledFor));
    expect(sentFirst.size).toBeGreaterThanOrEqual(30);
    expect(sentFirst.size).toBeLessThan(300);
    // Rewound to the earliest firing not sent: nothing before it is left out.
    const rewoundTo = deps.jobs.aheadLedger.get(group)?.rewoundTo;
    expect(rewoundTo).toBe(
      Math.min(...[...Array(300).keys()].map((i) => runAt + i * 5).filter((t) => !sentFirst.has(t))),
    );
    deps.queue.send = send;
    deps.clock.set(runAt - 10_000);
    await tickSweep(deps, group);
    expect(new Set(deps.queue.sent.map((m) => m.message.scheduledFor)).size).toBe(300);
  });

  it("cancelled after its firing passed unsent (its sweeper down), the firing is recorded cancelled", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    deps.clock.set(runAt + 5 * 60_000);
    await controlJob(deps, caller, jobId, "cancel");
    expect(knownRunsOf(deps, jobId)).toMatchObject([{ scheduledFor: runAt, status: RunStatus.Cancelled }]);
    await tickSweep(deps, groupOf(jobId));
    expect(deps.queue.sent).toEqual([]);
  });

  it("listed (as an export reads jobs), its firing is the job's next run until its group's sweep sends it", async () => {
    const deps = memoryDeps(NOW);
    const runAt = NOW + HOUR;
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: at(runAt) });
    const listed = async () =>
      (await listJobs(deps, caller, {})).jobs.find((j) => j.jobId === jobId)?.nextRunAt;
    // Its stack's ticks stopped an hour before (a move to another stack): ten minutes before its
    // time it is still unsent, so it is listed with its next run and an import recreates it.
    deps.clock.set(runAt - 10 * 60_000);
    expect(Date.parse(String(await listed()))).toBe(runAt);
    deps.clock.set(runAt - 20_000);
    await tickSweep(deps, groupOf(jobId));
    expect(await listed()).toBeUndefined(); // sent: it runs where it is
  });
});
