import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AHEAD_MS, aheadLimit, leaseRoom, MAX_PER_LEASE } from "../../packages/worker/src/lease-room";
import { type HoldClock, RunHold, START_MARGIN_MS } from "../../packages/worker/src/run-hold";

/**
 * The worker SDK's hold on a fake clock: leases arrive ahead of their runs' time; the hold
 * must never start a run before its startAt, never start one whose lease is (nearly) over,
 * and never run more than `concurrency` at once.
 */
class FakeClock implements HoldClock {
  private timers: Array<{ at: number; callback: () => void; id: number }> = [];
  private nextId = 0;
  constructor(public time: number) {}
  now() {
    return this.time;
  }
  setTimeout(callback: () => void, ms: number) {
    const id = this.nextId++;
    this.timers.push({ at: this.time + ms, callback, id });
    return id;
  }
  clearTimeout(handle: unknown) {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** Moves time forward, firing due timers in order (each may arm more). */
  async advance(ms: number) {
    const until = this.time + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > until) break;
      this.timers.shift();
      this.time = next.at;
      next.callback();
      await flush();
    }
    this.time = until;
    await flush();
  }
  /** A timer that fires early by the wall clock, as a real one can by a millisecond. */
  fireAllNow() {
    const due = this.timers.splice(0);
    for (const t of due) t.callback();
  }
}

const flush = () => new Promise<void>((done) => setImmediate(done));
const T = Date.UTC(2026, 11, 1, 9, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();

interface TestRun {
  runKey: string;
  startAt: string;
  leaseExpiresAt: string;
}

function run(key: string, startAt: number, leaseMs = 30_000): TestRun {
  return { runKey: key, startAt: iso(startAt), leaseExpiresAt: iso(startAt + leaseMs) };
}

function harness(clock: FakeClock, concurrency: number, workMs = 0) {
  const started: Array<{ key: string; at: number }> = [];
  const givenUp: string[] = [];
  const finishers: Array<() => void> = [];
  const hold = new RunHold<TestRun>({
    concurrency,
    clock,
    start: (r) => {
      started.push({ key: r.runKey, at: clock.now() });
      if (workMs === 0) return new Promise<void>((done) => finishers.push(done));
      return new Promise<void>((done) => clock.setTimeout(done, workMs));
    },
    giveUp: (r) => givenUp.push(r.runKey),
  });
  return {
    hold,
    started,
    givenUp,
    finishAll: () => {
      for (const finish of finishers.splice(0)) finish();
    },
  };
}

describe("the worker SDK's hold", () => {
  it("starts each run on its startAt, never before, whatever order the leases came in", async () => {
    const clock = new FakeClock(T - 20_000);
    const { hold, started } = harness(clock, 10, 5);
    hold.add(run("late", T + 1_500));
    hold.add(run("first", T));
    hold.add(run("second", T + 700));
    await clock.advance(19_999);
    expect(started).toEqual([]);
    await clock.advance(10_000);
    expect(started).toEqual([
      { key: "first", at: T },
      { key: "second", at: T + 700 },
      { key: "late", at: T + 1_500 },
    ]);
  });

  it("re-arms a timer that fires before the instant instead of starting early", async () => {
    const clock = new FakeClock(T - 5_000);
    const { hold, started } = harness(clock, 10, 5);
    hold.add(run("r", T));
    clock.time = T - 1; // the timer fires a millisecond early by the wall clock
    clock.fireAllNow();
    await flush();
    expect(started).toEqual([]);
    await clock.advance(1);
    expect(started).toEqual([{ key: "r", at: T }]);
  });

  it("starts a run whose startAt has passed at once", async () => {
    const clock = new FakeClock(T + 3_000);
    const { hold, started } = harness(clock, 1, 5);
    hold.add(run("overdue", T));
    await flush();
    expect(started).toEqual([{ key: "overdue", at: T + 3_000 }]);
  });

  it("runs at most `concurrency` at once; due runs wait for a slot, earliest start first", async () => {
    const clock = new FakeClock(T - 1_000);
    const { hold, started } = harness(clock, 2, 1_000);
    for (const [key, at] of [
      ["c", T + 200],
      ["a", T],
      ["d", T + 300],
      ["b", T + 100],
    ] as const)
      hold.add(run(key, at));
    await clock.advance(1_500); // T + 500: a and b run, c and d are due and waiting
    expect(started.map((s) => s.key)).toEqual(["a", "b"]);
    expect(hold.executing()).toBe(2);
    expect(hold.inHand()).toBe(4);
    await clock.advance(600); // a ends at T + 1,000, b at T + 1,100
    expect(started).toEqual([
      { key: "a", at: T },
      { key: "b", at: T + 100 },
      { key: "c", at: T + 1_000 },
      { key: "d", at: T + 1_100 },
    ]);
  });

  it("never starts a run held past its lease: one still waiting for a slot when its lease ends is given up", async () => {
    const clock = new FakeClock(T);
    const { hold, started, givenUp, finishAll } = harness(clock, 1);
    hold.add(run("busy", T, 30_000)); // holds the only slot until finishAll
    hold.add(run("short", T, 10_000));
    hold.add(run("long", T, 60_000));
    await clock.advance(10_000 - START_MARGIN_MS); // "short" has only the margin left
    finishAll();
    await flush();
    expect(givenUp).toEqual(["short"]);
    expect(started.map((s) => s.key)).toEqual(["busy", "long"]);
    // Every run that started had more than the margin of its lease left.
    for (const s of started) {
      const held = [run("busy", T, 30_000), run("long", T, 60_000)].find((r) => r.runKey === s.key);
      expect(Date.parse(held?.leaseExpiresAt ?? "") - s.at).toBeGreaterThan(START_MARGIN_MS);
    }
  });

  it("resolves idle once every run in hand has finished, and drops unstarted runs on demand", async () => {
    const clock = new FakeClock(T - 5_000);
    const { hold, finishAll } = harness(clock, 5);
    let idle = false;
    hold.add(run("now", T - 5_000));
    hold.add(run("later", T));
    void hold.idle().then(() => {
      idle = true;
    });
    await flush();
    expect(hold.dropUnstarted().map((r) => r.runKey)).toEqual(["later"]);
    expect(idle).toBe(false);
    finishAll();
    await flush();
    expect(idle).toBe(true);
    expect(hold.inHand()).toBe(0);
  });

  it("counts the runs held ahead of their time until their start comes within the base lead", async () => {
    const clock = new FakeClock(T - 20_000);
    const { hold } = harness(clock, 10);
    hold.add(run("due-at-T", T));
    hold.add(run("due-at-T+3s", T + 3_000));
    hold.add(run("now", T - 20_000));
    await flush();
    const ahead = () => hold.heldStartingAfter(clock.now() + AHEAD_MS);
    expect(ahead()).toBe(2); // "now" is executing, not held
    await clock.advance(15_000); // T - 5 s: "due-at-T" is within the base lead
    expect(ahead()).toBe(1);
    await clock.advance(3_001);
    expect(ahead()).toBe(0);
    expect(hold.inHand()).toBe(3);
  });
});

describe("the worker SDK's lease room", () => {
  const base = { concurrency: 10, prefetch: 50, inHand: 0, heldAhead: 0, asking: 0 };

  it("asks, with nothing held ahead, for at most the ahead limit less what requests out ask", () => {
    // The answer may be a dense second's runs 20 s ahead: a first request never asks for more
    // than may be held ahead (10 + 50: 30), so the other 30 places stay kept.
    expect(leaseRoom(base)).toBe(30);
    expect(leaseRoom({ ...base, asking: 30 })).toBe(0);
    expect(leaseRoom({ ...base, asking: 20 })).toBe(10);
    expect(leaseRoom({ ...base, inHand: 40 })).toBe(20);
    expect(leaseRoom({ ...base, inHand: 40, asking: 15 })).toBe(5);
    // Runs due soon do not count as held ahead: a backlog of them fills every place, the last
    // `concurrency` ones included, a request or two later.
    expect(leaseRoom({ ...base, inHand: 30 })).toBe(30);
    expect(leaseRoom({ ...base, inHand: 55 })).toBe(5);
    expect(leaseRoom({ ...base, inHand: 60 })).toBe(0);
    // A request's worth at most.
    expect(leaseRoom({ ...base, concurrency: 300, prefetch: 300 })).toBe(MAX_PER_LEASE);
    expect(leaseRoom({ ...base, concurrency: 300, prefetch: 300, asking: 200 })).toBe(MAX_PER_LEASE);
    // A prefetch below the concurrency ("do not hoard") asks for its room until it holds a run
    // ahead, so a backlog of due runs fills its slots a request at a time, not `prefetch` at a time.
    expect(leaseRoom({ ...base, concurrency: 300, prefetch: 40 })).toBe(MAX_PER_LEASE);
    expect(leaseRoom({ ...base, concurrency: 300, prefetch: 40, asking: 250 })).toBe(MAX_PER_LEASE);
    expect(leaseRoom({ ...base, concurrency: 300, prefetch: 40, inHand: 60, heldAhead: 40 })).toBe(0);
    expect(leaseRoom({ ...base, prefetch: 1 })).toBe(11);
    expect(leaseRoom({ ...base, prefetch: 1, inHand: 1, heldAhead: 1 })).toBe(0);
    expect(leaseRoom({ ...base, concurrency: 100, prefetch: 10 })).toBe(MAX_PER_LEASE);
    // No prefetch, no ahead limit: the slots alone.
    expect(leaseRoom({ ...base, prefetch: 0 })).toBe(10);
    expect(leaseRoom({ ...base, prefetch: 0, inHand: 4 })).toBe(6);
  });

  it("keeps the rest of the room for runs due soon once runs are held ahead", () => {
    // concurrency 10 + prefetch 50: at most 30 held ahead, 30 places kept.
    expect(aheadLimit(10, 50)).toBe(30);
    expect(leaseRoom({ ...base, inHand: 20, heldAhead: 20 })).toBe(10);
    expect(leaseRoom({ ...base, inHand: 20, heldAhead: 20, asking: 10 })).toBe(0);
    expect(leaseRoom({ ...base, inHand: 30, heldAhead: 30 })).toBe(0);
    // The places a run held ahead frees when its start comes near are usable again.
    expect(leaseRoom({ ...base, inHand: 30, heldAhead: 25 })).toBe(5);
    expect(leaseRoom({ ...base, inHand: 50, heldAhead: 0 })).toBe(10);
    // Never more than `prefetch` ahead, whatever the concurrency.
    expect(aheadLimit(300, 50)).toBe(50);
    expect(leaseRoom({ ...base, concurrency: 300, inHand: 50, heldAhead: 50 })).toBe(0);
    expect(aheadLimit(10, 90)).toBe(50);
  });

  it("rounds the ahead limit down and never above prefetch, at the edges", () => {
    expect(aheadLimit(1, 2)).toBe(1);
    expect(aheadLimit(10, 51)).toBe(30);
    expect(aheadLimit(10, 11)).toBe(10);
    expect(aheadLimit(10, 12)).toBe(11);
    expect(aheadLimit(10, 10)).toBe(10);
    expect(aheadLimit(1, 1)).toBe(1);
    expect(aheadLimit(10, 0)).toBe(0);
    expect(aheadLimit(0, 1)).toBe(0);
  });

  it("never lets runs held ahead and requests out pass the ahead limit, or hand and requests the room", () => {
    // Pollers ask and are answered (first asked, first answered: only the sum asked matters),
    // each answer any share of what was asked, any
    // part of it ahead (the worst: all of it); held runs come near and finish.
    type Step =
      | { kind: "ask" }
      | { kind: "answer"; share: number; aheadShare: number }
      | { kind: "near" }
      | { kind: "finish" };
    const step = fc.oneof(
      fc.constant<Step>({ kind: "ask" }),
      fc.record({
        kind: fc.constant("answer" as const),
        share: fc.double({ min: 0, max: 1, noNaN: true }),
        aheadShare: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
      fc.constant<Step>({ kind: "near" }),
      fc.constant<Step>({ kind: "finish" }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.array(step, { maxLength: 200 }),
        (concurrency, prefetch, steps) => {
          const limit = aheadLimit(concurrency, prefetch);
          let inHand = 0;
          let heldAhead = 0;
          const out: number[] = [];
          const asking = () => out.reduce((sum, n) => sum + n, 0);
          for (const s of steps) {
            if (s.kind === "ask") {
              const n = leaseRoom({ concurrency, prefetch, inHand, heldAhead, asking: asking() });
              if (n > 0) out.push(n);
            } else if (s.kind === "answer" && out.length > 0) {
              const asked = out.shift() as number;
              const got = Math.floor(asked * s.share);
              const ahead = Math.floor(got * s.aheadShare);
              inHand += got;
              heldAhead += ahead;
            } else if (s.kind === "near" && heldAhead > 0) {
              heldAhead -= 1;
            } else if (s.kind === "finish" && inHand > heldAhead) {
              inHand -= 1;
            }
            expect(inHand + asking()).toBeLessThanOrEqual(concurrency + prefetch);
            // The default's kind (prefetch at least concurrency): the limit binds every request.
            if (limit >= concurrency) expect(heldAhead + asking()).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("asks for at least the free slots while nothing is held ahead or asked for, whatever the prefetch", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 299 }),
        (concurrency, prefetch, busy) => {
          const inHand = Math.min(busy, concurrency - 1);
          const asked = leaseRoom({ concurrency, prefetch, inHand, heldAhead: 0, asking: 0 });
          expect(asked).toBeGreaterThanOrEqual(Math.min(concurrency - inHand, MAX_PER_LEASE));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("leaves a small tenant that shows up late the room bench-fairness needs at T - 5 s", () => {
    // Four workers of 10 + 90, each asking with two pollers from empty while one tenant's runs
    // are all ahead: each holds at most 50 ahead, so at least 200 places stay open for
    // everyone when the second is 5 s away (was 40: 20 at fair shares for a tenant with more
    // than that still to come, as one run in three of the bench did).
    const worker = { concurrency: 10, prefetch: 90, inHand: 0, heldAhead: 0, asking: 0 };
    const first = leaseRoom(worker);
    const second = leaseRoom({ ...worker, asking: first });
    expect(first + second).toBe(50);
    const heldAhead = first + second;
    expect(leaseRoom({ ...worker, inHand: heldAhead, heldAhead })).toBe(0);
    expect(4 * (10 + 90 - heldAhead)).toBeGreaterThanOrEqual(200);
  });

  it("never asks for a negative number, whatever the counts", () => {
    for (const inHand of [0, 59, 60, 61, 200])
      for (const heldAhead of [0, 1, 50, 51])
        for (const asking of [0, 50, 100])
          expect(leaseRoom({ ...base, inHand, heldAhead, asking })).toBeGreaterThanOrEqual(0);
  });
});
