import { randomBytes } from "node:crypto";
import type { Caller } from "../../lambdas/core/caller";
import { newJobId } from "../../lambdas/core/ids";
import type { Job } from "../../lambdas/core/job";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";

/** An active one-off job due at `runAt`, with the API's defaults, for tests and benchmarks. */
export function oneOffJob(runAt: number, now: number, overrides: Partial<Job> = {}): Job {
  return {
    jobId: newJobId((n) => randomBytes(n)),
    tenant: "t",
    type: "x",
    payload: null,
    schedule: { kind: "once", runAt },
    status: "active",
    nextRunAt: runAt,
    missedRuns: "run-once",
    maxLatenessMs: undefined,
    maxAttempts: 5,
    retry: { baseMs: 10_000, capMs: 3_600_000 },
    leaseSeconds: 30,
    idempotencyKey: undefined,
    requestHash: "h",
    createdAt: now,
    createdBy: "p",
    updatedAt: now,
    version: 1,
    audit: [],
    ...overrides,
  };
}

/**
 * A recurring schedule with one firing, at `at`: its last run ends the job by a write (a one-off's
 * end is its run's, unwritten: decision 0057), for tests of that write's interruptions.
 */
export function oneFiringSchedule(at: number): Job["schedule"] {
  return { kind: "interval", everyMs: 3_600_000, anchor: at, endAt: at };
}

/**
 * A one-off filed in the due index through the API: created paused and resumed, the remaining
 * way one gets there (an active one's run is made at create, near or ahead: decisions 0048,
 * 0058), for tests of the sweep's way with one-offs. The clock is where the caller set it.
 */
export async function dueIndexOneOff(
  deps: Parameters<typeof createJob>[0],
  caller: Caller,
  runAt: number,
  extra: Record<string, unknown> = {},
): Promise<{ jobId: string }> {
  const { jobId } = await createJob(deps, caller, {
    type: "x",
    runAt: new Date(runAt).toISOString(),
    ...extra,
    paused: {},
  });
  await controlJob(deps, caller, jobId, "resume");
  return { jobId };
}
