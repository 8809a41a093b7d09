import { describe, expect, it } from "vitest";
import {
  ForbiddenError,
  IdempotencyConflictError,
  NotFoundError,
  StaleFenceError,
  ValidationError,
} from "../../lambdas/core/errors";
import { parseInstant } from "../../lambdas/core/instant";
import { scheduledRun } from "../../lambdas/core/lifecycle/creation";
import { isLeasableAt } from "../../lambdas/core/lifecycle/transition";
import { RunStatus } from "../../lambdas/core/run";
import { firingsAfter } from "../../lambdas/core/schedule/schedule";
import { zoneOf } from "../../lambdas/core/schedule/zone-time";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { jobView } from "../../lambdas/core/views";
import { dueIndexOneOff } from "../support/jobs";
import { memoryDeps, watchedRun } from "../support/memory-ports";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const caller = { tenant: "t", principal: "p" };
/** The worker the tests lease as: it serves the tenants these jobs belong to. */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };

const soon = () => new Date(NOW + 1_000).toISOString();

describe("domain errors", () => {
  it("carry their class name, a stable code and, for validation, the field", () => {
    const errors = [
      new ValidationError("runAt: bad", "runAt"),
      new NotFoundError("gone"),
      new ForbiddenError("no"),
      new IdempotencyConflictError("used"),
      new StaleFenceError("old"),
    ];
    expect(errors.map((e) => [e.name, e.code])).toEqual([
      ["ValidationError", "ValidationError"],
      ["NotFoundError", "NotFound"],
      ["ForbiddenError", "Forbidden"],
      ["IdempotencyConflictError", "IdempotencyConflict"],
      ["StaleFenceError", "StaleFence"],
    ]);
    expect((errors[0] as ValidationError).field).toBe("runAt");
  });
});

describe("instants and zones", () => {
  it("refuses impossible dates and instants without an offset", () => {
    expect(parseInstant("2026-02-30T00:00:00Z")).toBeUndefined();
    expect(parseInstant("2026-02-28T00:00:00")).toBeUndefined();
    expect(parseInstant("2026-02-28T00:00:00-05:00")).toBe(Date.UTC(2026, 1, 28, 5));
  });

  it("knows IANA zones and nothing else", () => {
    expect(zoneOf("Europe/London")).toBe(zoneOf("Europe/London")); // cached
    expect(zoneOf("Europe/Atlantis")).toBeUndefined();
    expect([...firingsAfter({ kind: "cron", cron: "* * * * *", timeZone: "Europe/Atlantis" }, NOW)]).toEqual(
      [],
    );
  });

  it("stops walking a bounded cron schedule soon after its end, even one that fires rarely", () => {
    const endAt = Date.UTC(2026, 11, 31, 12);
    const schedule = { kind: "cron", cron: "0 0 31 12 *", timeZone: "Pacific/Kiritimati", endAt } as const;
    const firings = [...firingsAfter(schedule, Date.UTC(2026, 0, 1))];
    expect(firings.map((f) => f.at)).toEqual([Date.UTC(2026, 11, 30, 10)]); // 00:00 at +14:00
  });

  it("treats a leased run with no recorded expiry as lapsed", () => {
    const run = {
      runId: "r",
      jobId: "j",
      tenant: "t",
      type: "x",
      scheduledFor: NOW,
      status: RunStatus.Leased,
      attempt: 1,
      fence: 1,
      createdAt: NOW,
      startedAt: NOW,
      leaseExpiresAt: undefined,
      workerId: "w",
      finishedAt: undefined,
      error: undefined,
      checkAt: undefined,
      final: true,
    };
    expect(isLeasableAt(run, NOW)).toBe(true);
  });
});

describe("getJob", () => {
  it("shows the owner the job with its runs, and nobody else", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, { type: "x", payload: { a: 1 }, runAt: soon() });
    const view = await getJob(deps, caller, jobId);
    expect(view).toMatchObject({ jobId, status: "active", runAt: "2026-11-02T09:00:01Z", payload: { a: 1 } });
    expect(view.runs).toHaveLength(1);
    await expect(getJob(deps, { tenant: "other", principal: "o" }, jobId)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(getJob(deps, caller, "not-an-id")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("spells cron and interval schedules the way the API takes them", () => {
    const base = {
      jobId: "j",
      tenant: "t",
      type: "x",
      payload: null,
      status: "active",
      nextRunAt: undefined,
      missedRuns: "run-once",
      maxLatenessMs: 90_000,
      maxAttempts: 5,
      retry: { baseMs: 10_000, capMs: 3_600_000 },
      leaseSeconds: 30,
      idempotencyKey: undefined,
      requestHash: "h",
      createdAt: NOW,
      createdBy: "p",
      updatedAt: NOW,
      version: 1,
      audit: [],
    } as const;
    const cron = jobView(
      { ...base, schedule: { kind: "cron", cron: "0 9 * * 1-5", timeZone: "Europe/London", endAt: NOW } },
      [],
      NOW,
    );
    expect(cron).toMatchObject({
      cron: "0 9 * * 1-5",
      timeZone: "Europe/London",
      endAt: "2026-11-02T09:00:00Z",
    });
    const interval = jobView(
      { ...base, schedule: { kind: "interval", everyMs: 900_000, anchor: 0 } },
      [],
      NOW,
    );
    expect(interval).toMatchObject({
      interval: { every: "PT15M" },
      maxLateness: "PT1M30S",
      retry: { base: "PT10S", cap: "PT1H" },
    });
  });
});

describe("use cases under rarer conditions", () => {
  it("returns the original job without a next run when a retry comes after it fired", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: soon(), idempotencyKey: "k" };
    const first = await createJob(deps, caller, body);
    const again = await createJob(deps, caller, body);
    expect(first.nextRunAt).toBe("2026-11-02T09:00:01Z");
    expect(again).toEqual({ created: false, jobId: first.jobId, nextRunAt: undefined });
  });

  it("completes a run even when its message cannot be deleted, and logs it", async () => {
    const deps = memoryDeps(NOW);
    await createJob(deps, caller, { type: "x", runAt: soon() });
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    deps.queue.delete = async () => {
      throw new Error("receipt handle expired");
    };
    await expect(
      completeRun(deps, worker, lease?.runId ?? "", { fence: 1, result: "succeeded" }),
    ).resolves.toMatchObject({
      status: "succeeded",
    });
    expect(deps.warnings).toContain("could not delete the run's message");
  });

  it("completes a run that has no delivering message on record, and a run whose job is gone", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, caller, { type: "x", runAt: soon() });
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    const finish = deps.runs.finishRun.bind(deps.runs);
    deps.runs.finishRun = async (...args) => ({
      final: true,
      tracked: false,
      ...(await finish(...args)),
      receiptHandle: undefined,
    });
    deps.jobs.jobs.delete(jobId);
    await completeRun(deps, worker, lease?.runId ?? "", { fence: 1, result: "failed", retryable: false });
    expect(deps.queue.deleted).toEqual([]);
    expect(deps.jobs.jobs.size).toBe(0);
  });

  it("leaves a job for the next sweep when its run vanished between two reads", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await dueIndexOneOff(deps, caller, NOW + 3_600_000);
    const job = await deps.jobs.getJob(jobId);
    deps.clock.set(NOW + 3_600_000 - 10_000);
    // The sweep's one read of the block finds the firing's run written (decision 0051); by the
    // time it reads that run, it is gone (an expiry, say).
    const stored = { ...(job as NonNullable<typeof job>), nextRunAt: NOW + 3_600_000 };
    const written = {
      ...scheduledRun(stored, NOW + 3_600_000, NOW, true),
      status: RunStatus.Leased,
      attempt: 1,
      fence: 1,
    };
    deps.runs.listRunsBetween = async () => [written];
    const result = await fireJobs(deps, [stored]);
    expect(result).toMatchObject({ created: 0, deferred: 1 });
    expect(deps.queue.sent).toEqual([]);
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBe(NOW + 3_600_000); // left in the index
  });

  it("drops a message when another worker won the lease between read and update", async () => {
    const deps = memoryDeps(NOW);
    await createJob(deps, caller, { type: "x", runAt: soon() });
    deps.queue.deliverAll();
    deps.runs.leaseRun = async () => undefined;
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect(deps.queue.deleted).toHaveLength(1);
  });

  it("re-sends a run whose lease lapsed with nobody taking it, and leaves finished or re-claimed runs alone", async () => {
    const deps = memoryDeps(NOW);
    // Runs the repair pass watches: manual runs (a firing's run is carried by its message).
    await watchedRun(deps, caller);
    await watchedRun(deps, caller);
    await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 2 });
    deps.queue.sent.length = 0;
    deps.clock.advance((deps.settings.leaseSeconds + deps.settings.repairGraceSeconds) * 1000);
    // One run got finished behind the index's back; the other's lease simply lapsed.
    const [first] = [...deps.runs.runs.entries()];
    if (!first) throw new Error("no runs");
    deps.runs.runs.set(first[0], { ...first[1], status: RunStatus.Succeeded });
    const stats = await repairRuns(deps);
    expect(stats).toMatchObject({ inspected: 2, resent: 1 });
    expect(deps.queue.sent[0]?.delaySeconds).toBe(0);

    deps.clock.advance(deps.settings.repairGraceSeconds * 1000);
    deps.runs.rescheduleCheck = async () => false; // another repair pass claimed it first
    expect(await repairRuns(deps)).toMatchObject({ resent: 0 });
  });

  it("keeps the cursor where a shard failed, so the next tick reads it again", async () => {
    const deps = memoryDeps(NOW);
    await deps.jobs.advanceSweepCursor(0, 1);
    deps.jobs.queryDue = async () => {
      throw new Error("throttled");
    };
    const stats = await sweepGroup(deps, 0);
    expect(stats.failedShards).toBeGreaterThan(0);
    expect(await deps.jobs.getSweepCursor(0)).toBe(1);
    expect(deps.warnings).toContain("sweep of a shard failed; it is retried at its group's next sweep");
  });
});
