import { describe, expect, it } from "vitest";
import { InProcessTargetSlots } from "../../lambdas/adapters/targets/target-slots";
import { InProcessTenantShares } from "../../lambdas/adapters/targets/tenant-shares";
import { SAFE_VISIBILITY_SECONDS } from "../../lambdas/core/aws-limits";
import type { Caller } from "../../lambdas/core/caller";
import { RunStatus } from "../../lambdas/core/run";
import type { RunEnvelope, TargetInvoker } from "../../lambdas/core/target";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { dispatchRuns } from "../../lambdas/core/use-cases/dispatch-runs";
import { RECYCLE_AFTER_RECEIVES } from "../../lambdas/core/use-cases/lease-runs";
import {
  gaveBackThinBatch,
  OVER_SHARE_BACK_SECONDS,
  THIN_COME_BACK_SECONDS,
} from "../../lambdas/core/use-cases/share-admission";
import { rotateWebhookSecret } from "../../lambdas/core/use-cases/webhook-secrets";
import { knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * Tenant shares (decision 0039): how many of a dispatcher process's dispatches may hold one
 * tenant's runs, and the dispatcher keeping to them.
 */
const NOW = Date.parse("2027-01-04T09:00:00Z");
const A: Caller = { tenant: "a", principal: "arn:aws:iam::1:role/a" };
const B: Caller = { tenant: "b", principal: "arn:aws:iam::1:role/b" };

describe("in-process tenant shares", () => {
  it("hold a tenant to its runs, counted across dispatches, until the dispatches that hold them end", () => {
    const shares = new InProcessTenantShares({ runs: 3, dispatches: 5 });
    const [first, second, third] = [shares.open(), shares.open(), shares.open()];
    expect([first.admits("a"), first.admits("a"), second.admits("a")]).toEqual([true, true, true]);
    expect(second.admits("a")).toBe(false);
    expect(third.full("a")).toBe(true);
    expect(third.admits("b")).toBe(true); // another tenant has a share of its own
    expect(shares.heldBy("a")).toEqual({ runs: 3, dispatches: 2 });
    first.close();
    first.close(); // closing twice gives the runs back once
    expect(shares.heldBy("a")).toEqual({ runs: 1, dispatches: 1 });
    expect(first.admits("a")).toBe(false); // a closed dispatch takes nothing more
    expect(third.full("a")).toBe(false);
    expect(third.admits("a")).toBe(true);
    second.close();
    third.close();
    expect([shares.heldBy("a"), shares.heldBy("b")]).toEqual([
      { runs: 0, dispatches: 0 },
      { runs: 0, dispatches: 0 },
    ]);
  });

  it("hold a tenant to its dispatches, however few runs each one holds", () => {
    const shares = new InProcessTenantShares({ runs: 100, dispatches: 2 });
    const [first, second, third] = [shares.open(), shares.open(), shares.open()];
    expect([first.admits("a"), second.admits("a"), second.admits("a")]).toEqual([true, true, true]);
    expect(third.full("a")).toBe(true); // a third dispatch for one run each would be one too many
    expect(second.full("a")).toBe(false); // one that holds A's runs already may take more
    expect(third.admits("a")).toBe(false);
    first.close();
    expect(third.admits("a")).toBe(true);
  });

  it("hold a tenant to fewer dispatches while another tenant holds runs, whose runs may come a few to a dispatch", () => {
    const shares = new InProcessTenantShares({ runs: 100, dispatches: 3, dispatchesBeside: 2 });
    const [first, second, third, fourth] = [shares.open(), shares.open(), shares.open(), shares.open()];
    expect([first.admits("a"), second.admits("a")]).toEqual([true, true]); // alone: up to 3
    expect(third.admits("b")).toBe(true);
    expect(fourth.admits("a")).toBe(false); // beside B: 2, and A holds 2 already
    expect(first.admits("a")).toBe(true); // a dispatch that holds A's runs may take more
    expect(fourth.admits("b")).toBe(true); // B's second dispatch: within its own share
    third.close();
    fourth.close();
    expect(shares.open().admits("a")).toBe(true); // alone again: a third dispatch
  });
});

/** A target that records what it was sent. */
class RecordingTargets implements TargetInvoker {
  readonly delivered: RunEnvelope[] = [];
  async deliver(_target: unknown, envelope: RunEnvelope) {
    this.delivered.push(envelope);
    return { ok: true as const };
  }
}

/** A push job of `caller`'s due now, its run created; its message is in the queue's `ready`. */
async function pushJob(deps: MemoryDeps, caller: Caller): Promise<string> {
  if (!(await deps.webhookSecrets.get(caller.tenant))) await rotateWebhookSecret(deps, caller);
  const { jobId } = await createJob(deps, caller, {
    target: { kind: "https", url: `https://hooks.example.com/${caller.tenant}` },
    runAt: new Date(deps.clock.now()).toISOString(),
  });
  return jobId;
}

describe("the dispatcher keeps to its tenant shares", () => {
  it("sends a run back, unleased, when its tenant fills its share; leases another tenant's beside it", async () => {
    const deps = memoryDeps(NOW);
    const aJob = await pushJob(deps, A);
    const bJob = await pushJob(deps, B);
    deps.queue.deliverAll();
    const received = deps.queue.ready.splice(0);
    expect(received).toHaveLength(2);
    // Tenant A may hold one run in the process, and another dispatch holds one (a slow delivery).
    const shares = new InProcessTenantShares({ runs: 1, dispatches: 5 });
    const busy = shares.open();
    expect(busy.admits("a")).toBe(true);
    const targets = new RecordingTargets();
    const share = shares.open();
    const summary = await dispatchRuns(
      {
        ...deps,
        targets,
        targetSlots: new InProcessTargetSlots(),
        sleep: async (ms) => deps.clock.advance(ms),
        tenantShare: share,
      },
      received,
      60,
    );
    share.close();
    expect(summary).toEqual({ leased: 1, succeeded: 1, failed: 0, returned: 0, unrecorded: 0 });
    expect(targets.delivered.map((e) => e.jobId)).toEqual([bJob]);
    // A's run goes back to the queue with its fence untouched, for a dispatch with room: it was
    // not leased, so no item of it is written (a made run's lease writes it first, decision
    // 0051), and its message, visible again, still carries it pending, fence 0.
    expect(await deps.runs.listRecentRuns(aJob, 1)).toEqual([]);
    const aMessage = received.find((r) => r.message?.tenant === "a");
    expect(deps.queue.extended).toContainEqual({
      receiptHandle: aMessage?.receiptHandle,
      seconds: OVER_SHARE_BACK_SECONDS,
    });
    if (aMessage) deps.queue.ready.push(aMessage);
    expect(knownRunsOf(deps, aJob)).toMatchObject([{ status: RunStatus.Pending, fence: 0 }]);
    expect(shares.heldBy("a")).toEqual({ runs: 1, dispatches: 1 });
    expect(shares.heldBy("b")).toEqual({ runs: 0, dispatches: 0 });
  });

  it("leaves a message received many times to the lease step, which sends it back as a fresh copy", async () => {
    const deps = memoryDeps(NOW);
    await pushJob(deps, A);
    deps.queue.deliverAll();
    const [worn] = deps.queue.ready.splice(0).map((r) => ({ ...r, receiveCount: RECYCLE_AFTER_RECEIVES }));
    if (!worn) throw new Error("no message");
    const shares = new InProcessTenantShares({ runs: 1, dispatches: 5 });
    const busy = shares.open();
    busy.admits("a");
    const share = shares.open();
    const sentBefore = deps.queue.sent.length;
    const summary = await dispatchRuns(
      {
        ...deps,
        targets: new RecordingTargets(),
        targetSlots: new InProcessTargetSlots(),
        sleep: async (ms) => deps.clock.advance(ms),
        tenantShare: share,
      },
      [worn],
      60,
    );
    expect(summary.leased).toBe(0);
    // Not hidden once more (SQS would move it to the dead-letter queue at 50 receives): a copy.
    expect(deps.queue.extended.map((e) => e.receiptHandle)).not.toContain(worn.receiptHandle);
    expect(deps.queue.sent.slice(sentBefore).map((s) => s.message.runId)).toEqual([worn.message?.runId]);
    expect(deps.queue.deleted).toContain(worn.receiptHandle);
  });

  it("gives back a batch of one or two runs due far ahead, to come again with its second's others; holds one due soon", async () => {
    const deps = memoryDeps(NOW);
    const dispatch = (received: Parameters<typeof dispatchRuns>[1]) =>
      dispatchRuns(
        {
          ...deps,
          targets: new RecordingTargets(),
          targetSlots: new InProcessTargetSlots(),
          sleep: async (ms) => deps.clock.advance(ms),
        },
        received,
        60,
      );
    // A dense second's run, visible 20 s ahead, received alone.
    if (!(await deps.webhookSecrets.get(A.tenant))) await rotateWebhookSecret(deps, A);
    const far = NOW + 20_000;
    await createJob(deps, A, {
      target: { kind: "https", url: "https://hooks.example.com/a" },
      runAt: new Date(far).toISOString(),
    });
    deps.queue.deliverAll();
    const [alone] = deps.queue.ready.splice(0);
    if (!alone) throw new Error("no message");
    expect(await dispatch([alone])).toMatchObject({ leased: 0 });
    expect(deps.queue.extended).toContainEqual({
      receiptHandle: alone.receiptHandle,
      seconds: 20 - THIN_COME_BACK_SECONDS,
    });
    expect(deps.queue.deleted).not.toContain(alone.receiptHandle);
    // It comes again 3 s before its second: held and delivered.
    deps.clock.set(far - THIN_COME_BACK_SECONDS * 1000);
    expect(await dispatch([alone])).toMatchObject({ leased: 1, succeeded: 1 });
  });

  it("gives back a thin batch due days ahead for what SQS allows, and a worn one never: the lease step recycles it", async () => {
    const deps = memoryDeps(NOW);
    const days = NOW + 3 * 86_400_000; // a retry due three days ahead
    const message = { runId: "r", jobId: "j_thinbatch000000000", scheduledFor: days, tenant: "a", type: "x" };
    expect(await gaveBackThinBatch(deps, [{ message, receiptHandle: "far" }])).toBe(true);
    expect(deps.queue.extended).toEqual([{ receiptHandle: "far", seconds: SAFE_VISIBILITY_SECONDS }]);
    const worn = { message, receiptHandle: "worn", receiveCount: RECYCLE_AFTER_RECEIVES };
    expect(await gaveBackThinBatch(deps, [worn])).toBe(false);
    expect(deps.queue.extended).toHaveLength(1);
  });
});
