import type { SQSEvent } from "aws-lambda";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InProcessTargetSlots } from "../../lambdas/adapters/targets/target-slots";
import { COMPLETION_MARGIN_MS, worstEndOf } from "../../lambdas/core/delivery-deadline";
import { RunStatus } from "../../lambdas/core/run";
import type { Target, TargetInvoker } from "../../lambdas/core/target";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { type DispatchDeps, dispatchRuns } from "../../lambdas/core/use-cases/dispatch-runs";
import { rotateWebhookSecret } from "../../lambdas/core/use-cases/webhook-secrets";
import { createDispatchHandler } from "../../lambdas/handlers/dispatch";
import { localContext } from "../../local/lambda-context";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * Issue 27, finding 4: the dispatcher has the function's remaining time, not the run's lease.
 * It leases only what it can hold, deliver within the target's timeout and record by its
 * deadline; a leased run whose place at its target does not come in time is given back, its
 * attempt not counted.
 */
const NOW = Date.parse("2027-01-04T09:00:00Z");
const DEADLINE = NOW + 60_000;
const caller = { tenant: "t", principal: "arn:aws:iam::1:role/t" };
const slow: Target = {
  kind: "https",
  url: "https://slow.example.com/hook",
  timeoutSeconds: 30,
  concurrency: 1,
};

/** `count` jobs to the slow endpoint, due now, their messages received. */
async function dueRuns(deps: MemoryDeps, count: number, extra: Record<string, unknown> = {}) {
  if (!(await deps.webhookSecrets.get("t"))) await rotateWebhookSecret(deps, caller);
  const jobIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = { target: slow, runAt: new Date(NOW).toISOString(), leaseSeconds: 600, ...extra };
    jobIds.push((await createJob(deps, caller, body)).jobId);
  }
  deps.queue.deliverAll();
  return { jobIds, received: deps.queue.ready.splice(0) };
}

/** The job's run as written: a made run (decision 0051) has none until its lease writes it. */
const writtenRunOf = (deps: MemoryDeps, jobId: string) =>
  [...deps.runs.runs.values()].find((run) => run.jobId === jobId);

/**
 * The received messages given back visible in `seconds`, back in the queue as the next receive
 * would find them (so that knownRuns sees the runs they carry).
 */
function comeBack(deps: MemoryDeps, received: MemoryDeps["queue"]["ready"], seconds: number) {
  const back = new Set(deps.queue.extended.filter((e) => e.seconds === seconds).map((e) => e.receiptHandle));
  const messages = received.filter((r) => back.has(r.receiptHandle));
  deps.queue.ready.push(...messages);
  return messages.map((r) => r.message?.jobId);
}

/** Target slots that note how long each delivery was allowed to wait for a place. */
class NotedSlots extends InProcessTargetSlots {
  readonly waits: number[] = [];
  constructor(private readonly free = true) {
    super();
  }
  override acquire(key: string, limit: number, waitMs: number): Promise<boolean> {
    this.waits.push(waitMs);
    // Not free: another invocation's deliveries hold the place until too late.
    return this.free ? super.acquire(key, limit, waitMs) : Promise.resolve(false);
  }
}

const answering: TargetInvoker = { deliver: async () => ({ ok: true }) };

function dispatchDeps(deps: MemoryDeps, slots: InProcessTargetSlots, targets = answering): DispatchDeps {
  return { ...deps, targets, targetSlots: slots, sleep: async (ms) => deps.clock.advance(ms) };
}

describe("the dispatcher's time", () => {
  it("leases only what it can deliver and record by its deadline: three runs, concurrency 1, lease 600 s", async () => {
    const deps = memoryDeps(NOW);
    const { jobIds, received } = await dueRuns(deps, 3);
    const slots = new NotedSlots();
    const summary = await dispatchRuns(dispatchDeps(deps, slots), received, 60, DEADLINE);

    // 30 s for the first delivery fits the minute; a second one would wait up to 30 s for its place.
    expect(summary).toMatchObject({ leased: 1, succeeded: 1, returned: 0 });
    // No wait for a place is planned past the deadline (it was the lease: 597,000 ms).
    expect(Math.max(...slots.waits)).toBeLessThanOrEqual(DEADLINE - NOW);
    // Only the run delivered was leased, so only its item is written (decision 0051).
    const leased = jobIds.filter((id) => writtenRunOf(deps, id));
    expect(leased.map((id) => writtenRunOf(deps, id)?.status)).toEqual([RunStatus.Succeeded]);
    // The two others were given back unleased, visible in a second: no item written (no fence
    // raised, no attempt counted), each still the pending run its message carries.
    const others = jobIds.filter((id) => !leased.includes(id));
    expect(deps.queue.extended.filter((e) => e.seconds === 1)).toHaveLength(2);
    expect(comeBack(deps, received, 1).sort()).toEqual(others.sort());
    for (const id of others) {
      expect(knownRunsOf(deps, id)).toMatchObject([{ status: RunStatus.Pending, fence: 0, attempt: 0 }]);
    }
  });

  it("gives a leased run back, its attempt not counted, when its place at the target does not come in time", async () => {
    const deps = memoryDeps(NOW);
    // At-most-once: a run given back was never delivered, so it is leased again, not lost.
    const { jobIds, received } = await dueRuns(deps, 1, { delivery: "at-most-once" });
    const [jobId] = jobIds as [string];
    const taken = new NotedSlots(false);
    const delivered: string[] = [];
    const targets: TargetInvoker = {
      deliver: async (_target, envelope) => {
        delivered.push(envelope.runKey);
        return { ok: true };
      },
    };
    const summary = await dispatchRuns(dispatchDeps(deps, taken, targets), received, 60, DEADLINE);

    expect(summary).toMatchObject({ leased: 1, succeeded: 0, failed: 0, returned: 1 });
    // It waited only as long as a whole delivery could still end in time for its outcome.
    expect(taken.waits).toEqual([DEADLINE - COMPLETION_MARGIN_MS - 30_000 - NOW]);
    expect(delivered).toEqual([]);
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]).toMatchObject({
      status: RunStatus.Pending,
      attempt: 0,
      fence: 1,
      error: undefined,
    });
    expect(deps.queue.extended.at(-1)).toEqual({ receiptHandle: received[0]?.receiptHandle, seconds: 1 });

    // Its message comes back a second later: leased again and delivered, once.
    deps.clock.advance(1_000);
    const again = [{ ...(received[0] as (typeof received)[number]), receiptHandle: "rh-again" }];
    const later = deps.clock.now() + 60_000;
    expect(await dispatchRuns(dispatchDeps(deps, new NotedSlots(), targets), again, 60, later)).toMatchObject(
      {
        succeeded: 1,
      },
    );
    expect(delivered).toHaveLength(1);
    expect((await deps.runs.listRecentRuns(jobId, 1))[0]).toMatchObject({
      status: RunStatus.Succeeded,
      attempt: 1,
      fence: 2,
    });
  });

  it("takes its deadline from the function's remaining time (Lambda's context)", async () => {
    const deps = memoryDeps(NOW);
    const { jobIds, received } = await dueRuns(deps, 1);
    const delivered: string[] = [];
    const handler = createDispatchHandler(
      dispatchDeps(deps, new InProcessTargetSlots(), {
        deliver: async (_target, envelope) => {
          delivered.push(envelope.runKey);
          return { ok: true };
        },
      }),
      "https://sqs.local/push",
    );
    const message = received[0]?.message;
    const event = {
      Records: [{ messageId: "m", receiptHandle: "h", body: JSON.stringify(message), attributes: {} }],
    };
    // 20 s left: too little for a 30 s delivery and its outcome.
    const answer = await handler(event as unknown as SQSEvent, localContext("dispatcher", 20_000));
    expect(delivered).toEqual([]);
    // Its message comes back (a batch item failure), and the run was not leased: a made run's
    // item is written by its lease (decision 0051), so none means no fence raised, no attempt.
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: "m" }]);
    expect(writtenRunOf(deps, jobIds[0] as string)).toBeUndefined();
  });
});

describe("the worst end of a target's deliveries", () => {
  it("is arrivedBy + (floor((count - 1) / concurrency) + 1) timeouts", () => {
    expect(worstEndOf(1, 1, 30_000, NOW)).toBe(NOW + 30_000);
    expect(worstEndOf(3, 1, 30_000, NOW)).toBe(NOW + 90_000);
    expect(worstEndOf(10, 10, 10_000, NOW)).toBe(NOW + 10_000);
    expect(worstEndOf(11, 10, 10_000, NOW)).toBe(NOW + 20_000);
    expect(worstEndOf(0, 10, 10_000, NOW)).toBe(NOW);
  });

  it("bounds every order the deliveries may take their places in (a simulation)", () => {
    const T = 100;
    const delivery = fc.record({
      arrival: fc.integer({ min: 0, max: 300 }),
      duration: fc.integer({ min: 0, max: T }),
      priority: fc.integer(),
    });
    fc.assert(
      fc.property(
        fc.array(delivery, { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1, max: 6 }),
        (ds, c) => {
          const ends = simulate(ds, c);
          const arrivedBy = Math.max(...ds.map((d) => d.arrival));
          expect(Math.max(...ends)).toBeLessThanOrEqual(worstEndOf(ds.length, c, T, arrivedBy));
        },
      ),
      { seed: 27, numRuns: 500 },
    );
  });
});

/**
 * `concurrency` places, each delivery taking a free place from its arrival on, a freed place
 * going at once to a waiting delivery (the one of highest priority: any order); the end of each.
 */
function simulate(
  deliveries: ReadonlyArray<{ arrival: number; duration: number; priority: number }>,
  concurrency: number,
): number[] {
  const places: number[] = Array.from({ length: concurrency }, () => Number.NEGATIVE_INFINITY);
  const waiting = [...deliveries];
  const ends: number[] = [];
  let now = Math.min(...deliveries.map((d) => d.arrival));
  while (waiting.length > 0) {
    const ready = waiting.filter((d) => d.arrival <= now).sort((a, b) => b.priority - a.priority);
    for (const d of ready) {
      const place = places.findIndex((busyUntil) => busyUntil <= now);
      if (place < 0) break;
      places[place] = now + d.duration;
      ends.push(now + d.duration);
      waiting.splice(waiting.indexOf(d), 1);
    }
    const next = [...waiting.map((d) => d.arrival), ...places].filter((t) => t > now);
    if (next.length === 0) break;
    now = Math.min(...next);
  }
  return ends;
}
