import type { SQSClient } from "@aws-sdk/client-sqs";
import { beforeAll, describe, expect, it } from "vitest";
import { LaneBell, type LaneClientFactory } from "../../packages/worker/src/lane-bell";

/**
 * Decision 0049: an idle worker waits on its lanes in SQS. The bell rings on a message, goes
 * quiet after its wait, and falls back to polling ("unavailable") whenever it cannot listen.
 */
type Receive = {
  input: Record<string, unknown>;
  signal: AbortSignal;
  answer: (messages: number) => void;
  fail: (e: Error) => void;
};

function harness(
  options: {
    /** The route's answer; undefined: a grant of two lanes. */
    grant?: (body: Record<string, unknown>) => { status: number; body: unknown } | undefined;
    roundGraceMs?: number;
  } = {},
) {
  let now = Date.UTC(2026, 11, 3, 9, 0, 0);
  const asked: Array<Record<string, unknown>> = [];
  const receives: Receive[] = [];
  const clients: Array<{ config: unknown; destroyed: boolean }> = [];
  const stopping = new AbortController();
  const lanes = ["http://q/runs_a", "http://q/runs_b"];
  const grantFor = (body: Record<string, unknown>) =>
    options.grant?.(body) ?? {
      status: 200,
      body: {
        lanes: lanes.map((queueUrl, i) => ({ tenant: "t", type: `x${i}`, queueUrl })),
        listen: {
          region: "us-east-1",
          endpoint: "http://127.0.0.1:1",
          credentials: { accessKeyId: "k", secretAccessKey: "s" },
          expiresAt: new Date(now + 3_600_000).toISOString(),
          peekVisibilitySeconds: 0,
        },
      },
    };
  const clientFor: LaneClientFactory = (config) => {
    const record = { config, destroyed: false };
    clients.push(record);
    return {
      destroy: () => {
        record.destroyed = true;
      },
      send: ((command: { input: Record<string, unknown> }, opts: { abortSignal: AbortSignal }) =>
        new Promise((resolve, reject) => {
          receives.push({
            input: command.input,
            signal: opts.abortSignal,
            answer: (n) => resolve({ Messages: Array.from({ length: n }, () => ({ Body: "{}" })) }),
            fail: reject,
          });
          opts.abortSignal.addEventListener("abort", () => reject(new Error("aborted")));
        })) as unknown as SQSClient["send"],
    };
  };
  const bell = new LaneBell({
    types: ["x0", "x1"],
    workerId: "w-1",
    askForLanes: async (body) => {
      asked.push(body as Record<string, unknown>);
      return grantFor(body as Record<string, unknown>);
    },
    clientFor,
    stopping: stopping.signal,
    log: () => undefined,
    now: () => now,
    ...(options.roundGraceMs === undefined ? {} : { roundGraceMs: options.roundGraceMs }),
  });
  const settle = () => new Promise((done) => setTimeout(done, 10));
  return {
    bell,
    asked,
    receives,
    clients,
    stopping,
    settle,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe("LaneBell", () => {
  // The bell loads the SQS client on first use (a dynamic import). Loaded cold, on a busy
  // machine, that took longer than `settle`'s 10 ms and the first test saw no receive yet (a
  // flaky failure under a parallel run); loaded here, every test's import resolves at once.
  beforeAll(async () => {
    await import("@aws-sdk/client-sqs");
  });

  it("peeks every lane at once (one message, the API's visibility) and rings on the first message, cutting off the rest", async () => {
    const h = harness();
    const waiting = h.bell.wait(300_000);
    await h.settle();
    expect(h.asked).toEqual([{ workerId: "w-1", types: ["x0", "x1"], gone: [] }]);
    expect(h.receives.map((r) => r.input)).toEqual([
      { QueueUrl: "http://q/runs_a", MaxNumberOfMessages: 1, WaitTimeSeconds: 20, VisibilityTimeout: 0 },
      { QueueUrl: "http://q/runs_b", MaxNumberOfMessages: 1, WaitTimeSeconds: 20, VisibilityTimeout: 0 },
    ]);
    h.receives[1]?.answer(1);
    expect(await waiting).toEqual({ kind: "rung", lane: { tenant: "t", type: "x1" } });
    expect(h.receives[0]?.signal.aborted).toBe(true);
    expect(h.clients[0]?.config).toMatchObject({ region: "us-east-1", endpoint: "http://127.0.0.1:1" });
  });

  it("shares one wait between callers: one long poll a lane, however many pollers wait", async () => {
    const h = harness();
    const first = h.bell.wait(300_000);
    const second = h.bell.wait(300_000);
    await h.settle();
    expect(h.receives).toHaveLength(2);
    h.receives[0]?.answer(1);
    const rung = { kind: "rung", lane: { tenant: "t", type: "x0" } };
    expect(await Promise.all([first, second])).toEqual([rung, rung]);
  });

  it("polls again while the lanes stay empty, and goes quiet once its wait is over", async () => {
    const h = harness();
    const waiting = h.bell.wait(30_000);
    await h.settle();
    h.advance(20_000);
    for (const r of h.receives.splice(0)) r.answer(0);
    await h.settle();
    // The second round asks only for what is left of the wait.
    expect(h.receives.map((r) => r.input.WaitTimeSeconds)).toEqual([10, 10]);
    h.advance(10_000);
    for (const r of h.receives.splice(0)) r.answer(0);
    expect((await waiting).kind).toBe("quiet");
    expect(h.asked).toHaveLength(1); // the grant is kept between rounds
  });

  it("is unavailable when the deployment hands out no lanes, and asks again only ten minutes later", async () => {
    const h = harness({ grant: () => ({ status: 200, body: { lanes: [], reason: "no role" } }) });
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
    expect(h.asked).toHaveLength(1);
    h.advance(10 * 60_000);
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
    expect(h.asked).toHaveLength(2);
  });

  it("after a 5xx from the route (not a refusal) listens again 30 s later, not 10 minutes", async () => {
    let status = 503;
    const h = harness({ grant: () => (status === 200 ? undefined : { status, body: { message: "busy" } }) });
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
    h.advance(29_000);
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
    expect(h.asked).toHaveLength(1);
    status = 200;
    h.advance(1_000);
    const waiting = h.bell.wait(300_000);
    await h.settle();
    expect(h.asked).toHaveLength(2);
    h.receives[0]?.answer(1);
    expect((await waiting).kind).toBe("rung");
  });

  it("does not peek a lane again within a second of a ring", async () => {
    const h = harness();
    const first = h.bell.wait(300_000);
    await h.settle();
    h.receives[0]?.answer(1);
    await first;
    h.bell.wait(300_000);
    await h.settle();
    expect(h.receives).toHaveLength(2); // the cool-down: no new poll yet
    await new Promise((done) => setTimeout(done, 1_100));
    expect(h.receives).toHaveLength(4);
  });

  it("gives up on a round still out past its wait (a half-open connection) and polls for leases", async () => {
    const h = harness({ roundGraceMs: 50 });
    const waiting = h.bell.wait(1_000);
    await h.settle();
    // Neither poll ever answers.
    expect((await waiting).kind).toBe("unavailable");
    expect(h.receives.every((r) => r.signal.aborted)).toBe(true);
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable"); // 30 s before listening again
    expect(h.asked).toHaveLength(1);
  });

  it("backs off after failures in a row, 30 s doubling, and starts again from 30 s after a round that answers", async () => {
    const h = harness({ roundGraceMs: 20 });
    const stuckRound = async () => {
      const result = h.bell.wait(1_000);
      await h.settle();
      return (await result).kind;
    };
    expect(await stuckRound()).toBe("unavailable");
    h.advance(30_000);
    expect(await stuckRound()).toBe("unavailable"); // asked again, stuck again
    expect(h.asked).toHaveLength(2);
    h.advance(30_000);
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable"); // 60 s this time
    expect(h.asked).toHaveLength(2);
    h.advance(30_000);
    const answered = h.bell.wait(300_000);
    await h.settle();
    expect(h.asked).toHaveLength(3);
    h.receives.at(-1)?.answer(1);
    expect((await answered).kind).toBe("rung");
    expect(await stuckRound()).toBe("unavailable");
    h.advance(30_000);
    h.bell.wait(1_000);
    await h.settle();
    expect(h.asked).toHaveLength(4); // 30 s again: the ring reset the count
  });

  it("is unavailable on a route that does not exist (an older deployment) or an answer not as the contract says", async () => {
    for (const answer of [
      { status: 404, body: { message: "Not Found" } },
      { status: 200, body: { lanes: "nope" } },
    ]) {
      const h = harness({ grant: () => answer });
      expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
      expect(h.receives).toHaveLength(0);
    }
  });

  it("reports a deleted lane on the next ask, at once, with a fresh client", async () => {
    const h = harness();
    const waiting = h.bell.wait(300_000);
    await h.settle();
    const gone = Object.assign(new Error("gone"), { name: "QueueDoesNotExist" });
    h.receives[0]?.fail(gone);
    // The first failure ends the round: the other lane's poll is cut off.
    expect((await waiting).kind).toBe("unavailable");
    expect(h.receives[1]?.signal.aborted).toBe(true);
    expect(h.clients[0]?.destroyed).toBe(true);
    const again = h.bell.wait(300_000);
    await h.settle();
    expect(h.asked[1]).toEqual({ workerId: "w-1", types: ["x0", "x1"], gone: ["http://q/runs_a"] });
    h.receives[2]?.answer(1);
    expect((await again).kind).toBe("rung");
    h.bell.wait(300_000);
    await new Promise((done) => setTimeout(done, 1_100)); // past the cool-down: polling again
    expect(h.receives).toHaveLength(6);
    expect(h.asked).toHaveLength(2); // reported once: the new round polls on the grant in hand
  });

  it("after any other failure (credentials, network) polls for leases for 30 s before listening again", async () => {
    const h = harness();
    const waiting = h.bell.wait(300_000);
    await h.settle();
    h.receives[0]?.fail(Object.assign(new Error("denied"), { name: "AccessDenied" }));
    expect((await waiting).kind).toBe("unavailable");
    expect((await h.bell.wait(300_000)).kind).toBe("unavailable");
    expect(h.asked).toHaveLength(1);
    h.advance(30_000);
    h.bell.wait(300_000);
    await h.settle();
    expect(h.asked).toHaveLength(2);
  });

  it("asks for lanes and credentials again before they lapse", async () => {
    const h = harness();
    const waiting = h.bell.wait(300_000);
    await h.settle();
    h.receives[0]?.answer(1);
    await waiting;
    h.advance(56 * 60_000);
    h.bell.wait(300_000);
    await h.settle();
    expect(h.asked).toHaveLength(2);
    expect(h.clients[0]?.destroyed).toBe(true);
  });

  it("stops waiting at once when the worker stops", async () => {
    const h = harness();
    const waiting = h.bell.wait(300_000);
    await h.settle();
    h.stopping.abort();
    expect(["quiet", "unavailable"]).toContain((await waiting).kind);
    expect(h.receives.every((r) => r.signal.aborted)).toBe(true);
  });
});
