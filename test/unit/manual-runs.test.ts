import { describe, expect, it } from "vitest";
import { ConflictError, NotFoundError, ValidationError } from "../../lambdas/core/errors";
import { RunStatus } from "../../lambdas/core/run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { backfillJob, MAX_BACKFILL_FIRINGS, triggerJob } from "../../lambdas/core/use-cases/manual-runs";
import { memoryDeps } from "../support/memory-ports";

const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const HOUR = 3_600_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };
const bob = { tenant: "t-b", principal: "arn:aws:iam::1:role/bob" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t-a"] };
const iso = (ms: number) => new Date(ms).toISOString();

describe("trigger", () => {
  it("makes one pending run now under its own run key, sent at once, never a firing's", async () => {
    // The clock stands on a firing of the hourly job: the manual run moves a millisecond on.
    const deps = memoryDeps(NOW - 1);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 * * * *" });
    deps.clock.advance(1);
    const sentBefore = deps.queue.sent.length;
    const run = await triggerJob(deps, alice, jobId, {});
    expect(run).toMatchObject({ status: "pending", origin: "manual", scheduledFor: iso(NOW + 1) });
    expect(deps.queue.sent.slice(sentBefore)).toMatchObject([{ delaySeconds: 0 }]);
    // A second trigger in the same millisecond gets the next one.
    const again = await triggerJob(deps, alice, jobId, {});
    expect(again.scheduledFor).toBe(iso(NOW + 2));
    expect(again.runKey).not.toBe(run.runKey);
  });

  it("refuses another tenant's job (404), a paused job (409) and a body it does not know (400)", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 * * * *" });
    await expect(triggerJob(deps, bob, jobId, {})).rejects.toBeInstanceOf(NotFoundError);
    await expect(triggerJob(deps, alice, jobId, { now: true })).rejects.toBeInstanceOf(ValidationError);
    await controlJob(deps, alice, jobId, "pause");
    const runsBefore = deps.runs.runs.size;
    await expect(triggerJob(deps, alice, jobId, {})).rejects.toBeInstanceOf(ConflictError);
    expect(deps.runs.runs.size).toBe(runsBefore);
  });

  it("gives up with a 409 when every instant it tries already has a run", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 0 1 1 *" });
    deps.runs.createRun = async () => "exists";
    await expect(triggerJob(deps, alice, jobId, {})).rejects.toBeInstanceOf(ConflictError);
  });

  it("is leased however late it is, despite the job's maxLateness", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "0 0 1 1 *", maxLateness: 1 });
    await triggerJob(deps, alice, jobId, {});
    deps.clock.advance(60_000); // the message reaches a worker a minute after the trigger
    deps.queue.deliverAll();
    const leases = await leaseRuns(deps, worker, { workerId: "w", types: ["x"] });
    expect(leases).toHaveLength(1);
  });
});

describe("backfill", () => {
  it("runs each past firing of the range once, under the job's DST policy, even when called twice", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, {
      type: "x",
      cron: "30 1 * * *",
      timeZone: "Europe/London",
      dstPolicy: "every-occurrence",
    });
    const range = { from: "2026-10-24T12:00:00Z", to: "2026-10-26T12:00:00Z" };
    const first = await backfillJob(deps, alice, jobId, range);
    expect(first).toMatchObject({ firings: 3, created: 3, rerun: 0, existing: 0 });
    const runs = [...deps.runs.runs.values()].filter((r) => r.origin === "backfill");
    expect(runs.map((r) => iso(r.scheduledFor)).sort()).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-25T01:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    const sent = deps.queue.sent.length;
    expect(await backfillJob(deps, alice, jobId, range)).toMatchObject({
      firings: 3,
      created: 0,
      existing: 3,
    });
    expect(deps.queue.sent.length).toBe(sent);
  });

  it("runs a firing recorded missed (it never ran), and leaves a finished run alone", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", interval: { every: "1h" } });
    const job = await deps.jobs.getJob(jobId);
    if (!job) throw new Error("no job");
    const missedAt = NOW - 2 * HOUR;
    const doneAt = NOW - HOUR;
    const base = { jobId, tenant: "t-a", type: "x", attempt: 0, fence: 0, createdAt: NOW - 3 * HOUR };
    const finished = {
      startedAt: undefined,
      leaseExpiresAt: undefined,
      workerId: undefined,
      checkAt: undefined,
    };
    await deps.runs.createRun({
      ...base,
      ...finished,
      runId: `r_${jobId.slice(2)}_${missedAt}`,
      scheduledFor: missedAt,
      status: RunStatus.Missed,
      finishedAt: missedAt,
      error: "the sweep was down",
      final: false,
    });
    await deps.runs.createRun({
      ...base,
      ...finished,
      runId: `r_${jobId.slice(2)}_${doneAt}`,
      scheduledFor: doneAt,
      status: RunStatus.Succeeded,
      finishedAt: doneAt,
      error: undefined,
      final: false,
    });
    const result = await backfillJob(deps, alice, jobId, { from: iso(NOW - 3 * HOUR), to: iso(NOW) });
    // 06:00 had no record; 07:00 was missed; 08:00 ran; 09:00 was due at the create, which made its run.
    expect(result).toMatchObject({ firings: 4, created: 1, rerun: 1, existing: 2 });
    expect((await deps.runs.getRun(jobId, NOW))?.origin).toBeUndefined();
    expect((await deps.runs.getRun(jobId, missedAt))?.status).toBe(RunStatus.Pending);
    expect((await deps.runs.getRun(jobId, doneAt))?.status).toBe(RunStatus.Succeeded);
  });

  it("leaves firings from the job's next run on to the sweep, even when it is behind", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", interval: { every: "1h" } });
    deps.clock.advance(3 * HOUR); // no sweep ran: 10:00, 11:00 and 12:00 wait for it
    const result = await backfillJob(deps, alice, jobId, { from: iso(NOW), to: iso(NOW + 3 * HOUR) });
    expect(result).toMatchObject({ firings: 1, created: 0, existing: 1 });
    expect([...deps.runs.runs.values()].filter((r) => r.origin === "backfill")).toEqual([]);
  });

  it("refuses a range in the future, reversed, or over the firing bound, naming the field, and writes nothing", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, alice, { type: "x", cron: "* * * * *" });
    const runsBefore = deps.runs.runs.size;
    const fieldOf = async (body: unknown) => {
      try {
        await backfillJob(deps, alice, jobId, body);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).field;
      }
      throw new Error("expected a ValidationError");
    };
    expect(await fieldOf({ from: iso(NOW - HOUR), to: iso(NOW + HOUR) })).toBe("to");
    expect(await fieldOf({ from: iso(NOW - HOUR), to: iso(NOW - 2 * HOUR) })).toBe("to");
    const tooMany = { from: iso(NOW - (MAX_BACKFILL_FIRINGS + 5) * 60_000), to: iso(NOW - 1) };
    expect(await fieldOf(tooMany)).toBe("to");
    expect(await fieldOf({ from: "yesterday", to: iso(NOW) })).toBe("from");
    expect(await fieldOf({ to: iso(NOW) })).toBe("from");
    expect(deps.runs.runs.size).toBe(runsBefore);
  });
});
