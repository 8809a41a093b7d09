import { describe, expect, it } from "vitest";
import type { Job } from "../../lambdas/core/job";
import { seededRun } from "../../lambdas/core/lifecycle/creation";
import {
  isMade,
  madeRunsAfter,
  runsKeptSince,
  unwrittenMadeRuns,
  withMadeRuns,
} from "../../lambdas/core/made-runs";
import { RunStatus } from "../../lambdas/core/run";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { memoryDeps } from "../support/memory-ports";

/** The made range's pure rules (decision 0051), case by case. */
const NOW = Date.UTC(2026, 11, 2, 9, 0, 0);
const MINUTE = 60_000;
const alice = { tenant: "t-a", principal: "arn:aws:iam::1:role/alice" };

async function jobOf(body: Record<string, unknown>, made: Partial<Job>): Promise<Job> {
  const deps = memoryDeps(NOW - MINUTE);
  const { jobId } = await createJob(deps, alice, { type: "tick", ...body });
  const job = await deps.jobs.getJob(jobId);
  if (!job) throw new Error("no job");
  return { ...job, madeFrom: undefined, madeThrough: undefined, ...made };
}
const minutes = (runs: readonly { scheduledFor: number }[]) =>
  runs.map((r) => (r.scheduledFor - NOW) / MINUTE);

describe("the runs a job made", () => {
  it("a one-off: its recorded firing, once it is made, after `after` only; a final run", async () => {
    const once = await jobOf(
      { runAt: new Date(NOW + 10 * MINUTE).toISOString() },
      { lastFiringAt: undefined },
    );
    expect(madeRunsAfter(once, 0)).toEqual([]);
    const made = { ...once, nextRunAt: undefined, lastFiringAt: NOW + 10 * MINUTE };
    expect(madeRunsAfter(made, NOW)).toMatchObject([{ scheduledFor: NOW + 10 * MINUTE, final: true }]);
    expect(madeRunsAfter(made, NOW + 10 * MINUTE)).toEqual([]);
    expect(madeRunsAfter(made, NOW, 0)).toEqual([]);
    expect(isMade(made, NOW + 10 * MINUTE, Number.NEGATIVE_INFINITY)).toBe(true);
    expect(isMade(made, NOW + 11 * MINUTE, Number.NEGATIVE_INFINITY)).toBe(false);
  });

  it("a recurring job: its range's firings, the latest `limit`, none without a range or before the retention", async () => {
    const cron = { cron: "* * * * *", startAt: new Date(NOW).toISOString() };
    const none = await jobOf(cron, {});
    expect(madeRunsAfter(none, 0)).toEqual([]);
    expect(isMade(none, NOW, Number.NEGATIVE_INFINITY)).toBe(false);
    const made = await jobOf(cron, { madeFrom: NOW, madeThrough: NOW + 9 * MINUTE });
    expect(minutes(madeRunsAfter(made, 0))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(minutes(madeRunsAfter(made, 0, 3))).toEqual([7, 8, 9]);
    expect(minutes(madeRunsAfter(made, NOW + 5 * MINUTE))).toEqual([6, 7, 8, 9]);
    expect(isMade(made, NOW + 9 * MINUTE, Number.NEGATIVE_INFINITY)).toBe(true);
    expect(isMade(made, NOW + 10 * MINUTE, Number.NEGATIVE_INFINITY)).toBe(false);
    expect(isMade(made, NOW, NOW + MINUTE)).toBe(false); // older than the runs kept
    // Its last firing, when the job has one recorded, is final.
    const bounded = { ...made, nextRunAt: undefined, lastFiringAt: NOW + 9 * MINUTE };
    expect(madeRunsAfter(bounded, 0).map((r) => r.final)).toEqual([...Array(9).fill(false), true]);
  });

  it("leaves out the written ones, those a backlog's record stands for, and those older than the runs kept", async () => {
    const made = await jobOf(
      { cron: "* * * * *", startAt: new Date(NOW).toISOString() },
      { madeFrom: NOW, madeThrough: NOW + 9 * MINUTE },
    );
    const at = (m: number) => NOW + m * MINUTE;
    const run = (m: number) =>
      seededRun({
        runId: `r${m}`,
        jobId: made.jobId,
        tenant: "t-a",
        type: "tick",
        scheduledFor: at(m),
        final: false,
        createdAt: NOW,
      });
    const written = [
      { ...run(8), status: RunStatus.Succeeded },
      { ...run(1), status: RunStatus.Missed, missedThrough: at(4) },
    ];
    expect(
      minutes(unwrittenMadeRuns(made, written, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY, NOW)),
    ).toEqual([0, 5, 6, 7, 9]);
    expect(minutes(unwrittenMadeRuns(made, written, Number.NEGATIVE_INFINITY, at(6), NOW))).toEqual([
      6, 7, 9,
    ]);
    // A view of 2: the newest first, written or not; a full page of written ones bounds the made.
    expect(minutes(withMadeRuns(made, written, 2, Number.NEGATIVE_INFINITY, NOW))).toEqual([9, 8]);
    expect(minutes(withMadeRuns(made, written.slice(0, 1), 1, Number.NEGATIVE_INFINITY, NOW))).toEqual([9]);
  });

  it("keeps runs for ever with no retention, for the retention otherwise", () => {
    expect(runsKeptSince({ runRetentionDays: 0 }, NOW)).toBe(Number.NEGATIVE_INFINITY);
    expect(runsKeptSince({ runRetentionDays: 1 }, NOW)).toBe(NOW - 86_400_000);
  });
});
