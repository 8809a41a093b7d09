import { describe, expect, it } from "vitest";
import { MAX_DELAY_SECONDS } from "../../lambdas/core/aws-limits";
import { FixedClock } from "../../lambdas/core/clock";
import { DELIVERY_LEAD_SECONDS, delaySecondsUntil, EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import { formatInstant, parseInstant } from "../../lambdas/core/instant";
import { newRun } from "../../lambdas/core/lifecycle/creation";
import { isLeasableAt, isUnstartedOrLapsed } from "../../lambdas/core/lifecycle/transition";
import { RunStatus, runKeyOf } from "../../lambdas/core/run";

const T = Date.UTC(2026, 10, 2, 9, 0, 0);

describe("instants", () => {
  it("prints whole seconds without a fraction and keeps milliseconds otherwise", () => {
    expect(formatInstant(T)).toBe("2026-11-02T09:00:00Z");
    expect(formatInstant(T + 250)).toBe("2026-11-02T09:00:00.250Z");
  });

  it("parses instants with an offset and rejects garbage", () => {
    expect(parseInstant("2026-11-02T10:00:00+01:00")).toBe(T);
    expect(parseInstant("not a date")).toBeUndefined();
  });

  it("lets a fake clock be set and advanced", () => {
    const clock = new FixedClock(T);
    clock.advance(1500);
    expect(clock.now()).toBe(T + 1500);
    clock.set(5);
    expect(clock.now()).toBe(5);
  });
});

describe("delivery delay", () => {
  it("rounds down and leads: the message shows up DELIVERY_LEAD_SECONDS to a second more early", () => {
    expect(delaySecondsUntil(T, T - 9_263)).toBe(9 - DELIVERY_LEAD_SECONDS);
    expect(delaySecondsUntil(T, T - 10_000)).toBe(10 - DELIVERY_LEAD_SECONDS);
    expect(delaySecondsUntil(T, T - 1_500)).toBe(0);
    // The lease step holds anything that early.
    expect(EARLY_HOLD_MS).toBeGreaterThanOrEqual((DELIVERY_LEAD_SECONDS + 1) * 1000);
  });

  it("is zero for overdue runs and at most what SQS accepts", () => {
    expect(delaySecondsUntil(T, T + 60_000)).toBe(0);
    expect(delaySecondsUntil(T, T - 3_600_000)).toBe(MAX_DELAY_SECONDS);
  });
});

describe("runs", () => {
  const job = {
    jobId: "j_0123456789abcdefghjk",
    tenant: "t",
    type: "x",
    status: "active",
    schedule: { kind: "once", runAt: T },
    nextRunAt: T,
  } as const;

  it("builds the run key from the job id and the scheduled instant", () => {
    expect(runKeyOf(job.jobId, T)).toBe("j_0123456789abcdefghjk@2026-11-02T09:00:00Z");
  });

  it("starts pending, with fence 0 and a repair check one grace period after it is due", () => {
    const run = newRun(job, T, T - 60_000, 30_000);
    expect(run).toMatchObject({ status: RunStatus.Pending, fence: 0, attempt: 0, checkAt: T + 30_000 });
    expect(newRun(job, T, T + 5_000, 30_000).checkAt).toBe(T + 35_000);
  });

  it("is leasable when pending, or leased with a lapsed lease, and never when finished", () => {
    const run = newRun(job, T, T, 30_000);
    expect(isLeasableAt(run, T)).toBe(true);
    const leased = { ...run, status: RunStatus.Leased, leaseExpiresAt: T + 30_000 };
    expect(isLeasableAt(leased, T + 29_999)).toBe(false);
    expect(isLeasableAt(leased, T + 30_000)).toBe(true);
    expect(isLeasableAt({ ...run, status: RunStatus.Succeeded }, T)).toBe(false);
  });

  it("is leasable from its scheduled instant or its retry's, whichever is later", () => {
    const run = newRun(job, T + 5_000, T, 30_000);
    expect(isLeasableAt(run, T + 4_999)).toBe(false);
    expect(isLeasableAt(run, T + 5_000)).toBe(true);
    const retry = { ...run, retryAt: T + 60_000 };
    expect(isLeasableAt(retry, T + 59_999)).toBe(false);
    expect(isLeasableAt(retry, T + 60_000)).toBe(true);
  });

  it("may be ended unrun while pending (due or not) or once its lease lapsed, never while held or finished", () => {
    const run = newRun(job, T + 5_000, T, 30_000);
    expect(isUnstartedOrLapsed(run, T)).toBe(true);
    const leased = { ...run, status: RunStatus.Leased, leaseExpiresAt: T + 30_000 };
    expect(isUnstartedOrLapsed(leased, T + 29_999)).toBe(false);
    expect(isUnstartedOrLapsed(leased, T + 30_000)).toBe(true);
    expect(isUnstartedOrLapsed({ ...run, status: RunStatus.Missed }, T)).toBe(false);
  });
});
