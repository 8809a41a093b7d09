import { randomBytes } from "node:crypto";
import { newJobId } from "../../lambdas/core/ids";
import type { Job } from "../../lambdas/core/job";

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
