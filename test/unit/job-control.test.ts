import { describe, expect, it } from "vitest";
import { durationMs } from "../../lambdas/core/duration";
import { ConflictError, NotFoundError, ValidationError } from "../../lambdas/core/errors";
import { PAUSED_RUN_REASON, RunStatus } from "../../lambdas/core/run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { listJobs, listRuns } from "../../lambdas/core/use-cases/list-jobs";
import { knownRuns, knownRunsOf } from "../support/known-runs";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";
import { shownStatus } from "../support/shown-job";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const MINUTE = 60_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const bob = { tenant: "t-b", principal: "arn:aws:iam::1:role/bob" };
/** The worker the tests lease as: it serves the tenants these jobs belong to. */
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a", "t-b"] };

const at = (ms: number) => new Date(ms).toISOString();
/** What these tests count is one firing's run a sweep; blocks have tests of their own. */
const ONE_FIRING_A_SWEEP = { advanceBlockSeconds: 0 };

async function everyMinute(deps: MemoryDeps, extra: Record<string, unknown> = {}) {
  const { jobId } = await createJob(deps, alice, { type: "tick", cron: "* * * * *", ...extra });
  return jobId;
}

async function dueJob(deps: MemoryDeps, jobId: string) {
  const job = await deps.jobs.getJob(jobId);
  if (job?.nextRunAt === undefined) throw new Error("job has no next run");
  return { ...job, nextRunAt: job.nextRunAt };
}

describe("controlJob", () => {
  // Decision 0051: the sweep writes no item for a run it makes, its message is the run, so a run
  // "created and not sent" no longer exists for a pause or a cancel to be refused for (the refusal
  // sees written items only). What it guarded still holds: a sweep killed at its send leaves
  // nothing behind, and a pause or a cancel while the made run is in flight goes through, and the
  // run's own message records it ended unstarted: it never runs.
  it("lets a pause or a cancel through while the sweep's made run is in flight: its message ends it unstarted, never runs it", async () => {
    const ends = [
      ["pause", "paused", RunStatus.Missed, PAUSED_RUN_REASON],
      ["cancel", "cancelled", RunStatus.Cancelled, "the job was cancelled before the run started"],
    ] as const;
    for (const [action, jobStatus, runStatus, reason] of ends) {
      const deps = memoryDeps(NOW + 30_000, ONE_FIRING_A_SWEEP);
      const jobId = await everyMinute(deps);
      const job = await dueJob(deps, jobId);
      deps.clock.set(job.nextRunAt);
      deps.queue.failSends = true; // the sweep dies at its send: it wrote nothing before it
      await expect(fireJobs(deps, [job])).rejects.toThrow();
      deps.queue.failSends = false;
      expect(knownRuns(deps)).toEqual([]);
      expect(deps.jobs.jobs.get(jobId)?.nextRunAt).toBe(job.nextRunAt); // left for the next sweep
      deps.clock.advance(20_000);
      await fireJobs(deps, [job]); // the sweep sends the run's message and moves the job on
      expect(deps.queue.sent).toHaveLength(1);
      expect(deps.runs.runs.size).toBe(0);
      expect(knownRunsOf(deps, jobId)).toEqual([
        expect.objectContaining({ scheduledFor: job.nextRunAt, status: RunStatus.Pending }),
      ]);

      expect(await controlJob(deps, alice, jobId, action)).toMatchObject({ status: jobStatus });
      deps.queue.deliverAll();
      expect(await leaseRuns(deps, worker, { workerId: "w", types: ["tick"] })).toEqual([]);
      expect(await deps.runs.getRun(jobId, job.nextRunAt)).toMatchObject({
        status: runStatus,
        error: reason,
        attempt: 0,
      });
    }
  });

  it("pauses, resumes and cancels, recording who and when, and moves the job in and out of the due index", async () => {
    const deps = memoryDeps(NOW + 30_000, ONE_FIRING_A_SWEEP);
    const jobId = await everyMinute(deps);
    deps.clock.advance(1_000);
    const paused = await controlJob(deps, alice, jobId, "pause");
    expect(paused).toMatchObject({ status: "paused", nextRunAt: "2026-11-02T09:01:00Z" });
    expect(deps.jobs.jobs.get(jobId)?.dueKey).toBeUndefined();

    deps.clock.advance(10 * MINUTE);
    const resumed = await controlJob(deps, alice, jobId, "resume");
    expect(resumed.status).toBe("active");
    // Due long ago: resuming fired it at once, by the run-once policy (its made runs are carried
    // by their messages, decision 0051).
    const runs = knownRuns(deps);
    expect(runs.filter((r) => r.status === RunStatus.Pending)).toHaveLength(2); // the latest missed and the next
    expect(runs.filter((r) => r.status === RunStatus.Missed).length).toBeGreaterThanOrEqual(9);

    const cancelled = await controlJob(deps, alice, jobId, "cancel");
    expect(cancelled).toMatchObject({ status: "cancelled", nextRunAt: undefined });
    expect(cancelled.audit.map((a) => [a.action, a.by])).toEqual([
      ["created", alice.principal],
      ["paused", alice.principal],
      ["resumed", alice.principal],
      ["cancelled", alice.principal],
    ]);
  });

  it("answers a repeated action with the job as it is, and refuses forbidden moves", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await everyMinute(deps);
    await controlJob(deps, alice, jobId, "pause");
    const again = await controlJob(deps, alice, jobId, "pause");
    expect(again.audit).toHaveLength(2);
    await controlJob(deps, alice, jobId, "cancel");
    await expect(controlJob(deps, alice, jobId, "resume")).rejects.toBeInstanceOf(ConflictError);
    await expect(controlJob(deps, alice, jobId, "pause")).rejects.toMatchObject({ field: "jobId" });
  });

  it("treats another tenant's job, and a malformed id, as not found", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await everyMinute(deps);
    await expect(controlJob(deps, bob, jobId, "cancel")).rejects.toBeInstanceOf(NotFoundError);
    await expect(controlJob(deps, alice, "../etc", "cancel")).rejects.toBeInstanceOf(NotFoundError);
    expect(await shownStatus(deps, jobId)).toBe("active");
  });

  it("reads again when a sweep changed the job under it, and gives up after a few tries", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await everyMinute(deps);
    const replace = deps.jobs.replaceJob.bind(deps.jobs);
    let refusals = 1;
    deps.jobs.replaceJob = async (job, expected) => (refusals-- > 0 ? false : replace(job, expected));
    expect((await controlJob(deps, alice, jobId, "pause")).status).toBe("paused");
    deps.jobs.replaceJob = async () => false;
    await expect(controlJob(deps, alice, jobId, "resume")).rejects.toThrow("kept changing");
  });
});

describe("listings", () => {
  it("lists only the caller's jobs, filtered, a page at a time", async () => {
    const deps = memoryDeps(NOW);
    for (let i = 0; i < 3; i++) {
      deps.clock.advance(1);
      await createJob(deps, alice, { type: "a", runAt: at(NOW + 3_600_000) });
    }
    await createJob(deps, bob, { type: "a", runAt: at(NOW + 3_600_000) });
    const first = await listJobs(deps, alice, { limit: "2" });
    expect(first.jobs).toHaveLength(2);
    const second = await listJobs(deps, alice, { limit: "2", cursor: first.cursor });
    expect(second).toEqual({ jobs: [expect.objectContaining({ type: "a" })] });
    expect((await listJobs(deps, alice, { status: "paused" })).jobs).toEqual([]);
    await expect(listJobs(deps, alice, { limit: "0" })).rejects.toMatchObject({ field: "limit" });
    await expect(listJobs(deps, alice, [])).rejects.toMatchObject({ field: "query" });
  });

  it("pages through one job's runs and hides other tenants' jobs", async () => {
    const deps = memoryDeps(NOW);
    const jobId = await everyMinute(deps, { missedRuns: "catch-up" });
    deps.clock.advance(5 * MINUTE);
    await fireJobs(deps, [await dueJob(deps, jobId)]);
    const page = await listRuns(deps, alice, jobId, { limit: "3" });
    expect(page.runs).toHaveLength(3);
    expect(page.cursor).toBeDefined();
    await expect(listRuns(deps, bob, jobId, {})).rejects.toBeInstanceOf(NotFoundError);
    await expect(listRuns(deps, alice, "nope", {})).rejects.toMatchObject({ field: "jobId" });
  });
});

describe("creating recurring jobs", () => {
  it("stores the policies, lateness, retry and lease settings", async () => {
    const deps = memoryDeps(NOW);
    const { jobId, nextRunAt } = await createJob(deps, alice, {
      type: "digest",
      cron: "0 9 * * MON-FRI",
      timeZone: "Europe/London",
      missedRuns: "skip",
      maxLateness: "PT30M",
      retry: { base: 5, cap: "PT10M" },
      leaseSeconds: 120,
    });
    expect(nextRunAt).toBe("2026-11-02T09:00:00Z"); // Monday 09:00 GMT: a firing at the instant of creation counts
    expect(await deps.jobs.getJob(jobId)).toMatchObject({
      missedRuns: "skip",
      maxLatenessMs: 1_800_000,
      retry: { baseMs: 5_000, capMs: 600_000 },
      leaseSeconds: 120,
    });
  });

  it.each([
    [{ retry: { base: 600, cap: 60 } }, "retry.cap"],
    [{ retry: { base: "P1M" } }, "retry.base"],
    [{ maxLateness: "soon" }, "maxLateness"],
    [{ maxLateness: "PT0.5S" }, "maxLateness"],
    [{ interval: { every: "1 minute" } }, "interval.every"],
  ])("refuses %j naming %s", async (extra, field) => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", ...("interval" in extra ? {} : { cron: "* * * * *" }), ...extra };
    await expect(createJob(deps, alice, body)).rejects.toMatchObject({ field });
    expect(deps.jobs.jobs.size).toBe(0);
  });

  it("reads durations as seconds or ISO 8601", () => {
    expect(durationMs(90, "f")).toBe(90_000);
    expect(durationMs("PT1H30M", "f")).toBe(5_400_000);
    expect(() => durationMs("P1Y", "f")).toThrow(ValidationError);
  });
});

describe("firing recurring jobs", () => {
  it("records every firing as missed and completes the job when a bounded schedule is long over", async () => {
    const deps = memoryDeps(NOW, ONE_FIRING_A_SWEEP);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      cron: "* * * * *",
      endAt: at(NOW + 3 * MINUTE),
      missedRuns: "skip",
    });
    deps.clock.advance(10 * MINUTE);
    const result = await fireJobs(deps, [await dueJob(deps, jobId)]);
    expect(result).toMatchObject({ created: 0, missed: 3 });
    expect(await shownStatus(deps, jobId)).toBe("completed");
  });

  it("sends what it created even when another writer holds one of the job's runs", async () => {
    const deps = memoryDeps(NOW, ONE_FIRING_A_SWEEP);
    const jobId = await everyMinute(deps, { missedRuns: "catch-up" });
    const job = await dueJob(deps, jobId);
    deps.clock.advance(3 * MINUTE);
    // Another writer just created the second firing's run.
    const other = job.nextRunAt + MINUTE;
    await deps.runs.createRun({
      ...(await import("../../lambdas/core/lifecycle/creation")).newRun(job, other, deps.clock.now(), 30_000),
    });
    const result = await fireJobs(deps, [job]);
    expect(result.deferred).toBe(1);
    expect(deps.queue.sent.map((s) => s.message.scheduledFor)).not.toContain(other);
    expect(deps.queue.sent.length).toBeGreaterThan(0);
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBe(job.nextRunAt); // left for the next sweep
  });
});

describe("cancelling a job whose sweeper is behind", () => {
  it("records each firing that was due but never swept as a cancelled run, and nothing more", async () => {
    // Prepare: an every-minute job; three of its firings come due while nothing sweeps.
    const deps = memoryDeps(NOW + 30_000);
    const jobId = await everyMinute(deps);
    deps.clock.advance(3 * MINUTE);

    // Act
    await controlJob(deps, alice, jobId, "cancel");

    // Assess: 09:01, 09:02 and 09:03 are accounted for; 09:04 (not yet due) is not.
    const runs = [...deps.runs.runs.values()].sort((a, b) => a.scheduledFor - b.scheduledFor);
    expect(runs.map((r) => [at(r.scheduledFor), r.status])).toEqual([
      [at(NOW + MINUTE), "cancelled"],
      [at(NOW + 2 * MINUTE), "cancelled"],
      [at(NOW + 3 * MINUTE), "cancelled"],
    ]);
    expect(runs.every((r) => r.error === "the job was cancelled before this due run was created")).toBe(true);
    expect((await deps.jobs.getJob(jobId))?.nextRunAt).toBeUndefined(); // no sweep will see it again
  });

  it("records nothing for a paused job, or for an active one that is up to date", async () => {
    const deps = memoryDeps(NOW + 30_000);
    const paused = await everyMinute(deps);
    await controlJob(deps, alice, paused, "pause");
    const current = await everyMinute(deps);
    deps.clock.advance(2 * MINUTE);
    await controlJob(deps, alice, paused, "cancel");
    expect(knownRuns(deps)).toEqual([]);

    await fireJobs(deps, [await dueJob(deps, current)]);
    const swept = knownRunsOf(deps, current).map((r) => r.scheduledFor);
    expect(swept.length).toBeGreaterThan(0);
    await controlJob(deps, alice, current, "cancel");
    // The runs the sweep made ahead are written cancelled now (decision 0051: their items did not
    // exist), but no firing is added: none was due and left unswept.
    const after = knownRunsOf(deps, current);
    expect(after.map((r) => r.scheduledFor)).toEqual(swept);
    expect(after.some((r) => r.error === "the job was cancelled before this due run was created")).toBe(
      false,
    );
  });
});

describe("leasing runs of paused jobs and jobs with their own lease", () => {
  it("records a queued run of a paused job as missed instead of starting it", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", runAt: at(NOW + 1_000) });
    deps.queue.deliverAll();
    await controlJob(deps, alice, jobId, "pause");
    expect(await leaseRuns(deps, worker, { workerId: "w", types: ["x"] })).toEqual([]);
    expect([...deps.runs.runs.values()][0]).toMatchObject({
      status: "missed",
      error: expect.stringContaining("paused"),
    });
  });

  it("holds a run for the job's own lease length", async () => {
    const deps = memoryDeps(NOW);
    await createJob(deps, alice, { type: "x", runAt: at(NOW + 1_000), leaseSeconds: 300 });
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    // Received a second early: leased at once for 300 s from the due instant (plus a second's
    // margin on the message, so a copy only shows up once the lease has lapsed), then handed over.
    expect(deps.queue.extended).toEqual([{ receiptHandle: expect.any(String), seconds: 302 }]);
    expect(lease?.leaseExpiresAt).toBe("2026-11-02T09:05:01Z");
  });
});
