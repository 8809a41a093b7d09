import { describe, expect, it } from "vitest";
import { newRun } from "../../lambdas/core/lifecycle/creation";
import { isRepeatOf, type RunRecord, transition } from "../../lambdas/core/lifecycle/transition";
import { RunStatus } from "../../lambdas/core/run";
import { giveBackRun } from "../../lambdas/core/use-cases/give-back-run";
import type { Granted } from "../../lambdas/core/use-cases/lease-runs";
import { oneOffJob } from "../support/jobs";
import { memoryDeps } from "../support/memory-ports";

/**
 * A write carried out whose answer was lost is sent again by the SDK with the same input; its
 * guard then refuses it on its own effect. The lifecycle answers such a repeat as applied, the
 * run unchanged (decision 0053), and only a refused one: these are the pure rules.
 */
const T = Date.UTC(2026, 11, 5, 9, 0, 0);
const pending: RunRecord = newRun({ jobId: "j_repeat", tenant: "t", type: "x" }, T, T, 30_000);
const grant = { workerId: "w", startsAt: T, leaseExpiresAt: T + 30_000, receiptHandle: "rh-1", now: T };
const plan = { error: "boom", retryAt: T + 20_000, checkAt: T + 50_000, now: T + 1_000 };

function applied(run: RunRecord | undefined, ...events: Parameters<typeof transition>[1][]): RunRecord {
  let current = run;
  for (const event of events) {
    current = transition(current, event);
    if (!current) throw new Error(`refused: ${event.kind}`);
  }
  return current as RunRecord;
}

describe("a write's repeat after a lost answer", () => {
  it("a lease: answered by the receive that holds it, refused to any other", () => {
    const leased = applied(pending, { kind: "lease", grant });
    expect(leased).toMatchObject({ status: RunStatus.Leased, fence: 1, receiptHandle: "rh-1" });
    expect(transition(leased, { kind: "lease", grant })).toBe(leased);
    expect(transition(leased, { kind: "lease", grant: { ...grant, receiptHandle: "rh-2" } })).toBeUndefined();
    // Lapsed, the same receive's lease is not refused: it leases again, as the store's write does.
    const late = { ...grant, startsAt: T + 30_000, now: T + 30_000 };
    expect(transition(leased, { kind: "lease", grant: late })).toMatchObject({ fence: 2, attempt: 2 });
  });

  it("a retry: answered by its fence and instants, refused to another plan or fence", () => {
    const retried = applied(pending, { kind: "lease", grant }, { kind: "retry", fence: 1, plan });
    expect(isRepeatOf(retried, { kind: "retry", fence: 1, plan })).toBe(true);
    expect(transition(retried, { kind: "retry", fence: 1, plan })).toBe(retried);
    expect(
      transition(retried, { kind: "retry", fence: 1, plan: { ...plan, retryAt: T + 21_000 } }),
    ).toBeUndefined();
    expect(
      transition(retried, { kind: "retry", fence: 1, plan: { ...plan, checkAt: T + 51_000 } }),
    ).toBeUndefined();
    expect(transition(retried, { kind: "retry", fence: 2, plan })).toBeUndefined();
  });

  it("a give-back: answered on a pending run under its fence, refused once leased again", () => {
    const given = applied(
      pending,
      { kind: "lease", grant },
      { kind: "return-lease", fence: 1, now: T + 1_000 },
    );
    expect(given).toMatchObject({ status: RunStatus.Pending, attempt: 0, fence: 1 });
    expect(transition(given, { kind: "return-lease", fence: 1, now: T + 1_000 })).toBe(given);
    expect(transition(given, { kind: "return-lease", fence: 0, now: T + 1_000 })).toBeUndefined();
    const again = applied(given, {
      kind: "lease",
      grant: { ...grant, receiptHandle: "rh-2", startsAt: T + 2_000 },
    });
    expect(transition(again, { kind: "return-lease", fence: 1, now: T + 3_000 })).toBeUndefined();
  });

  it("a finish: answered by the outcome it recorded under its fence, refused to another", () => {
    const leased = applied(pending, { kind: "lease", grant });
    const outcome = {
      status: RunStatus.DeadLettered,
      error: "lapsed",
      now: T + 1_000,
      final: false,
    } as const;
    const finished = applied(leased, { kind: "finish", fence: 1, outcome });
    expect(transition(finished, { kind: "finish", fence: 1, outcome })).toBe(finished);
    for (const other of [
      { ...outcome, now: T + 2_000 },
      { ...outcome, status: RunStatus.Succeeded },
      { ...outcome, error: undefined },
      { ...outcome, final: true },
    ])
      expect(transition(finished, { kind: "finish", fence: 1, outcome: other })).toBeUndefined();
    expect(transition(finished, { kind: "finish", fence: 2, outcome })).toBeUndefined();
    // A worker's completion: its own tenant's run only.
    expect(transition(finished, { kind: "finish", fence: 1, outcome, tenants: ["t"] })).toBe(finished);
    expect(transition(finished, { kind: "finish", fence: 1, outcome, tenants: ["other"] })).toBeUndefined();
  });

  it("no other event: a heartbeat or a replay refused is refused", () => {
    const leased = applied(pending, { kind: "lease", grant });
    const outcome = { status: RunStatus.Succeeded, error: undefined, now: T + 1_000, final: false } as const;
    const finished = applied(leased, { kind: "finish", fence: 1, outcome });
    const beat = { kind: "heartbeat", fence: 1, leaseExpiresAt: T + 60_000, now: T } as const;
    expect(isRepeatOf(finished, beat)).toBe(false);
    expect(transition(finished, beat)).toBeUndefined();
    const replay = { kind: "replay", from: "dead-lettered", by: "op", now: T, checkAt: T + 1 } as const;
    expect(transition(finished, replay)).toBeUndefined();
  });
});

describe("giveBackRun", () => {
  async function grantedRun() {
    const deps = memoryDeps(T);
    const job = { ...oneOffJob(T, T - 60_000), jobId: "j_givebackrun000000000" };
    const run = newRun(job, T, T, 30_000);
    await deps.runs.createRun(run);
    const leased = await deps.runs.leaseRun(run.jobId, run.scheduledFor, grant);
    if (!leased) throw new Error("not leased");
    const granted = {
      lease: { runId: run.runId, fence: leased.fence },
      receiptHandle: "rh-1",
    } as unknown as Granted;
    return { deps, run, granted };
  }

  it("shows the message again in a second once the lease is given back, and again for its repeat", async () => {
    const { deps, run, granted } = await grantedRun();
    await giveBackRun(deps, granted);
    await giveBackRun(deps, granted); // the SDK's repeat, its first answer lost: applied
    expect(deps.queue.extended).toEqual([
      { receiptHandle: "rh-1", seconds: 1 },
      { receiptHandle: "rh-1", seconds: 1 },
    ]);
    expect(await deps.runs.getRun(run.jobId, run.scheduledFor)).toMatchObject({
      status: "pending",
      attempt: 0,
    });
  });

  it("leaves a run leased again since alone, and warns when the message cannot be shown", async () => {
    const { deps, run, granted } = await grantedRun();
    await deps.runs.finishRun(run.jobId, run.scheduledFor, 1, {
      status: RunStatus.Succeeded,
      error: undefined,
      now: T + 1_000,
      final: false,
    });
    await giveBackRun(deps, granted);
    expect(deps.queue.extended).toEqual([]);

    const second = await grantedRun();
    second.deps.queue.failExtends.add("rh-1");
    await giveBackRun(second.deps, second.granted);
    expect(second.deps.warnings).toContain("could not show a given-back run's message again");
  });
});
