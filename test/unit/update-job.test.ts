import { describe, expect, it } from "vitest";
import { ConflictError, PreconditionFailedError, ValidationError } from "../../lambdas/core/errors";
import { SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { listJobs } from "../../lambdas/core/use-cases/list-jobs";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import {
  etagMatches,
  MOVABLE_BEFORE_MS,
  SUPERSEDED_REASON,
  updateJob,
} from "../../lambdas/core/use-cases/update-job";
import { crashing } from "../support/crashing";
import { knownRuns } from "../support/known-runs";
import { memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 30);
const HOUR = 3_600_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const iso = (ms: number) => new Date(ms).toISOString().replace(".000", "");

describe("updateJob", () => {
  it("starts a new schedule after the last run that exists, keeping the runs already created", async () => {
    const deps = memoryDeps(NOW);
    // Every minute: the create made the 09:01 run (inside the lookahead) and moved on to 09:02.
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "* * * * *" });
    const created = [...deps.runs.runs.values()].map((r) => r.scheduledFor);
    const latest = Math.max(...created);
    const result = await updateJob(deps, alice, jobId, { interval: { every: "30s" } }, undefined).catch(
      (error: unknown) => error,
    );
    expect(result).toBeInstanceOf(ValidationError); // under a minute: the create's own rule

    const updated = await updateJob(deps, alice, jobId, { cron: "*/15 * * * *" }, '"1"');
    expect(updated.changed).toEqual(["cron"]);
    expect(Date.parse(updated.job.nextRunAt as string)).toBeGreaterThan(latest);
    expect(updated.job.nextRunAt).toBe("2026-11-02T09:15:00Z");
    expect([...deps.runs.runs.values()].map((r) => r.scheduledFor)).toEqual(created); // kept
  });

  it("answers a patch that changes nothing without writing (same version)", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 9 * * *", maxAttempts: 5 });
    const same = await updateJob(deps, alice, jobId, { maxAttempts: 5, timeZone: "UTC" }, undefined);
    expect(same.changed).toEqual([]);
    expect(same.job.version).toBe(1);
  });

  it("clears optional fields with null, back to their defaults", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      cron: "0 9 * * *",
      timeZone: "Europe/London",
      dstPolicy: "skip-gap",
      jitter: "PT5M",
      maxLateness: 60,
      leaseSeconds: 300,
    });
    const cleared = await updateJob(
      deps,
      alice,
      jobId,
      { timeZone: null, dstPolicy: null, jitter: null, maxLateness: null, leaseSeconds: null },
      undefined,
    );
    expect(cleared.changed).toEqual(["dstPolicy", "jitter", "leaseSeconds", "maxLateness", "timeZone"]);
    expect(cleared.job).toMatchObject({ timeZone: "UTC", dstPolicy: "first-occurrence", leaseSeconds: 30 });
    expect(cleared.job.jitter).toBeUndefined();
    expect(cleared.job.maxLateness).toBeUndefined();
  });

  it("records the firings a paused job's old schedule had in the pause as missed, then goes on with the new one", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 * * * *" });
    await controlJob(deps, alice, jobId, "pause");
    deps.clock.advance(3 * HOUR); // 10:00, 11:00 and 12:00 fall in the pause
    const updated = await updateJob(deps, alice, jobId, { cron: "30 * * * *" }, undefined);
    const missed = [...deps.runs.runs.values()].filter((r) => r.status === RunStatus.Missed);
    expect(missed.map((r) => iso(r.scheduledFor)).sort()).toEqual([
      "2026-11-02T10:00:00Z",
      "2026-11-02T11:00:00Z",
      "2026-11-02T12:00:00Z",
    ]);
    expect(missed[0]?.error).toBe("the job was paused, and its schedule changed before it was resumed");
    expect(updated.job).toMatchObject({ status: "paused", nextRunAt: "2026-11-02T12:30:00Z" });
  });

  it("refuses: a stale If-Match (412), a one-off whose run exists, an overdue active job and an ended one (409)", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 * * * *" });
    await updateJob(deps, alice, jobId, { payload: 1 }, undefined);
    await expect(updateJob(deps, alice, jobId, { payload: 2 }, '"1"')).rejects.toBeInstanceOf(
      PreconditionFailedError,
    );
    await expect(updateJob(deps, alice, jobId, { payload: 2 }, 'W/"2"')).rejects.toBeInstanceOf(
      PreconditionFailedError,
    );

    // The sweep has not made the 10:00 run yet at 10:00:05: a schedule change waits for it.
    deps.clock.advance(HOUR - 25_000);
    await expect(updateJob(deps, alice, jobId, { cron: "0 0 * * *" }, undefined)).rejects.toBeInstanceOf(
      ConflictError,
    );
    // A payload change does not move the schedule: fine.
    expect((await updateJob(deps, alice, jobId, { payload: 3 }, '"2"')).job.version).toBe(3);

    const oneOff = await createJob(deps, alice, { type: "x", runAt: iso(deps.clock.now() + 1_000) });
    await expect(
      updateJob(deps, alice, oneOff.jobId, { runAt: iso(deps.clock.now() + HOUR) }, undefined),
    ).rejects.toBeInstanceOf(ConflictError);

    await controlJob(deps, alice, jobId, "cancel");
    await expect(updateJob(deps, alice, jobId, { payload: 4 }, undefined)).rejects.toBeInstanceOf(
      ConflictError,
    );
  });

  it("moves a one-off whose run is not made yet, and switches schedule kinds", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", runAt: iso(NOW + HOUR) });
    const moved = await updateJob(deps, alice, jobId, { runAt: iso(NOW + 2 * HOUR) }, undefined);
    expect(moved.job).toMatchObject({ runAt: iso(NOW + 2 * HOUR), nextRunAt: iso(NOW + 2 * HOUR) });
    const recurring = await updateJob(
      deps,
      alice,
      jobId,
      { cron: "0 12 * * *", timeZone: "Asia/Tokyo" },
      undefined,
    );
    expect(recurring.job).toMatchObject({
      cron: "0 12 * * *",
      timeZone: "Asia/Tokyo",
      nextRunAt: "2026-11-03T03:00:00Z",
    });
    expect(recurring.job.runAt).toBeUndefined();
    expect(recurring.changed).toEqual(["cron", "runAt", "timeZone"]);
  });
});

describe("updateJob of a one-off whose run is made (at create: decision 0048)", () => {
  const worker = { tenant: "t-a", principal: "arn:aws:iam::1:role/w", tenants: ["t-a"] };

  it("moves it while its run is pending and not about to be handed out: the run is superseded", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", runAt: iso(NOW + 10 * 60_000) });
    const moved = await updateJob(deps, alice, jobId, { runAt: iso(NOW + 12 * 60_000) }, undefined);
    expect(moved.job).toMatchObject({ nextRunAt: iso(NOW + 12 * 60_000) });
    const runs = [...deps.runs.runs.values()];
    expect(runs.map((r) => [r.scheduledFor, r.status, r.error])).toEqual([
      [NOW + 10 * 60_000, RunStatus.Cancelled, SUPERSEDED_REASON],
    ]);
    const stored = await deps.jobs.getJob(jobId);
    expect(stored).toMatchObject({ status: "active", nextRunAt: NOW + 12 * 60_000 });
    expect(stored?.lastFiringAt).toBeUndefined();

    // The superseded run's message comes at its old time: dropped, and ends nothing.
    deps.clock.set(NOW + 10 * 60_000 - 3_000);
    deps.queue.deliverAll();
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect(await shownStatus(deps, jobId)).toBe("active");

    // The sweep makes the new run; it runs and ends the job.
    deps.clock.set(NOW + 12 * 60_000 - 20_000);
    for (let group = 0; group < SWEEP_GROUP_COUNT; group++) await sweepGroup(deps, group);
    deps.clock.set(NOW + 12 * 60_000 - 2_000);
    deps.queue.deliverAll();
    const [lease, ...more] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 });
    expect(more).toEqual([]);
    expect(lease?.scheduledFor).toBe(iso(NOW + 12 * 60_000));
    await completeRun(deps, worker, lease?.runId ?? "", { fence: lease?.fence ?? 0, result: "succeeded" });
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("a PATCH killed before it cancelled the made run: the run's own message cancels it, not run twice", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", runAt: iso(NOW + 10 * 60_000) });
    const killed = crashing(deps, "runs", "abandonRun", false);
    await expect(
      updateJob(killed, alice, jobId, { runAt: iso(NOW + 12 * 60_000) }, undefined),
    ).rejects.toThrow(/killed/);
    // The run is still pending, carried by its message alone (decision 0051: nothing written yet).
    expect(knownRuns(deps).map((r) => r.status)).toEqual([RunStatus.Pending]);
    expect(deps.runs.runs.size).toBe(0);

    deps.clock.set(NOW + 10 * 60_000 - 3_000);
    deps.queue.deliverAll();
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 10 })).toEqual([]);
    expect([...deps.runs.runs.values()].map((r) => [r.status, r.error])).toEqual([
      [RunStatus.Cancelled, SUPERSEDED_REASON],
    ]);
    expect(await shownStatus(deps, jobId)).toBe("active");
  });

  it("refuses (409) once its run is due within a minute, or was handed out", async () => {
    const deps = memoryDeps(NOW);
    const soon = await createJob(deps, alice, { type: "x", runAt: iso(NOW + MOVABLE_BEFORE_MS) });
    await expect(
      updateJob(deps, alice, soon.jobId, { runAt: iso(NOW + HOUR) }, undefined),
    ).rejects.toBeInstanceOf(ConflictError);

    const later = await createJob(deps, alice, { type: "y", runAt: iso(NOW + 5 * 60_000) });
    deps.clock.set(NOW + 5 * 60_000 - 3_000);
    deps.queue.deliverAll();
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["y"] })).toHaveLength(1);
    deps.clock.set(NOW);
    await expect(
      updateJob(deps, alice, later.jobId, { runAt: iso(NOW + HOUR) }, undefined),
    ).rejects.toBeInstanceOf(ConflictError);
    // Nothing changed: its run leased, the job as it was.
    expect((await deps.jobs.getJob(later.jobId))?.lastFiringAt).toBe(NOW + 5 * 60_000);
  });
});

describe("labels on update", () => {
  it("merges labels key by key, files the new ones before the write and unfiles removed ones after", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      cron: "0 9 * * *",
      labels: { team: "a", env: "prod" },
    });
    const updated = await updateJob(deps, alice, jobId, { labels: { team: null, tier: "gold" } }, undefined);
    expect(updated.changed).toEqual(["labels"]);
    expect(updated.job.labels).toEqual({ env: "prod", tier: "gold" });
    expect(deps.jobs.labelFilings).toEqual([
      { jobId, labels: { env: "prod", tier: "gold" }, removed: [] },
      { jobId, labels: { env: "prod", tier: "gold" }, removed: ["team"] },
    ]);
    const page = await listJobs(deps, alice, { label: "tier=gold,env=prod" });
    expect(page.jobs.map((j) => j.jobId)).toEqual([jobId]);
    expect((await listJobs(deps, alice, { label: "team=a" })).jobs).toEqual([]);
    const cleared = await updateJob(deps, alice, jobId, { labels: null }, undefined);
    expect(cleared.job.labels).toEqual({});
    const many = Array.from({ length: 21 }, (_, i) => `k${i}=v`).join(",");
    for (const label of ["team", "team=a=b", "bad key=x", many]) {
      await expect(listJobs(deps, alice, { label })).rejects.toMatchObject({ field: "label" });
    }
  });
});

describe("updateJob's refusals and races", () => {
  it("refuses a type or idempotency key change, an empty patch, a runAt long past and a schedule with no run left", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      interval: { every: "1h" },
      startAt: iso(NOW),
    });
    const fieldOf = async (patch: unknown) =>
      updateJob(deps, alice, jobId, patch, undefined).then(
        () => "accepted",
        (error: ValidationError) => error.field,
      );
    expect(await fieldOf({ type: "y" })).toBe("type");
    expect(await fieldOf({ idempotencyKey: "k" })).toBe("idempotencyKey");
    expect(await fieldOf({})).toBe("body");
    expect(await fieldOf({ runAt: iso(NOW - HOUR) })).toBe("runAt");
    expect(await fieldOf({ endAt: iso(NOW + 1) })).toBe("endAt");
    expect(await fieldOf({ cron: "0 9 * * *", endAt: iso(NOW + 1) })).toBe("cron");
    // Bounds and a jitter window survive a change of something else, and show on the job.
    const bounded = await updateJob(
      deps,
      alice,
      jobId,
      { endAt: iso(NOW + 48 * HOUR), jitter: "PT1M" },
      undefined,
    );
    expect(bounded.job).toMatchObject({ startAt: iso(NOW), endAt: iso(NOW + 48 * HOUR), jitter: "PT1M" });
    const again = await updateJob(deps, alice, jobId, { maxAttempts: 2 }, undefined);
    expect(again.changed).toEqual(["maxAttempts"]);
    expect(again.job).toMatchObject({ startAt: iso(NOW), endAt: iso(NOW + 48 * HOUR), jitter: "PT1M" });
  });

  it("reads again when the job changed under it, and gives up with a 409 when it keeps changing", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 9 * * *" });
    const replace = deps.jobs.replaceJob.bind(deps.jobs);
    let refusals = 1;
    deps.jobs.replaceJob = async (job, expected) => (refusals-- > 0 ? false : replace(job, expected));
    expect((await updateJob(deps, alice, jobId, { payload: 1 }, undefined)).job.version).toBe(2);
    refusals = 100;
    await expect(updateJob(deps, alice, jobId, { payload: 2 }, undefined)).rejects.toBeInstanceOf(
      ConflictError,
    );
  });
});

describe("etagMatches", () => {
  it.each([
    ['"3"', 3, true],
    ['"2", "3"', 3, true],
    ["*", 7, true],
    ['"3"', 4, false],
    ['W/"3"', 3, false],
    ["3", 3, false],
  ] as const)("If-Match %s against version %i: %s", (header, version, expected) => {
    expect(etagMatches(header, version)).toBe(expected);
  });
});
