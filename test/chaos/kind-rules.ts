import type { RunResponse } from "@jobsched/contract";
import { EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import { PAUSED_RUN_REASON } from "../../lambdas/core/run";
import type { AcceptedJob, Fault, WorkerEvent } from "./chaos-events";
import { HANDOVER_MS, lapsesExplained, lostExplained } from "./fault-books";
import { atMostOnceDuring } from "./job-settings";
import { overlapEndingProblems } from "./overlap-rules";

/**
 * What each kind of job in the crash loop's mix must end as, run by run. The payload decides
 * the outcome (an `ok` run succeeds, a `permanent` one is dead-lettered); anything else needs a
 * reason the test itself caused: the job's cancel, its pause, a maxLateness it asked for, its
 * overlap policy or delivery mode at the time (overlap-rules.ts; they change by PATCH), or a
 * fault that lapsed an at-most-once lease.
 */
export const FINAL_BY_KIND: Readonly<Record<string, readonly string[]>> = {
  ok: ["succeeded"],
  "retry-once": ["succeeded"],
  permanent: ["dead-lettered"],
  "exhausts-retries": ["dead-lettered"],
  "late-is-missed": ["succeeded", "missed"],
  "slow-heartbeats": ["succeeded"],
  "at-most-once": ["succeeded", "lost"],
  "push-ok": ["succeeded"],
  "push-retry-once": ["succeeded"],
  // Every-minute jobs whose runs outlast a minute early in the window, under each overlap policy.
  overlap: ["succeeded"],
  // Every-minute jobs failing each first attempt, their retry 20 s later; PATCHed to at-most-once.
  "retry-patched": ["succeeded"],
};

/** The error of a run whose attempts its lapsed leases used up (lifecycle/outcomes.ts). */
const LAPSES_EXHAUSTED = /^\d+ lease\(s\) lapsed without a completion$/;

/** The mix's maxLateness for `late-is-missed` jobs (crash-loop.test.ts). */
export const LATE_IS_MISSED_MS = 3_000;
/** The API's instants may drop their milliseconds. */
const INSTANT_ROUNDING_MS = 1_000;
/** A paused firing may be recorded missed if due from a hand-over before the pause to the resume's answer. */
const PAUSE_EDGE_MS = EARLY_HOLD_MS;

/**
 * How far from a runtime kill a firing may be left overdue: a sweep plans firings a lookahead
 * (30 s locally) ahead and counts one missed once it is past a grace, so an outage within a
 * minute either side can leave two firings to one plan, where run-once runs only the later.
 */
const OUTAGE_REACH_MS = 60_000;

/** Whether a firing fell in the job's pause: from a hand-over before it to the resume's answer. */
const inPause = (job: AcceptedJob, at: number) =>
  job.pausedAt !== undefined &&
  at >= job.pausedAt - PAUSE_EDGE_MS &&
  at <= (job.resumeAnsweredAt ?? Number.POSITIVE_INFINITY) + PAUSE_EDGE_MS;

/**
 * A run a fault held up (a runtime kill that lost its lease's answer, a worker stopped or killed
 * holding it) comes back when its lease lapses, up to a minute later; a pause that came after
 * the fault and before then misses it, as the lease step must.
 */
const pausedWhileHeldUp = (job: AcceptedJob, at: number, faults: readonly Fault[]) => {
  const pausedAt = job.pausedAt;
  if (pausedAt === undefined || pausedAt < at || pausedAt > at + OUTAGE_REACH_MS) return false;
  return faults.some((f) =>
    f.kind === "runtime-kill"
      ? f.backAt >= at - OUTAGE_REACH_MS && f.at <= pausedAt
      : f.at >= at - OUTAGE_REACH_MS && f.at <= pausedAt,
  );
};

const MISSED_BY_LATENESS = /more than maxLateness/;
/** The missed-run policy's reasons (a firing overdue after an outage, another run standing for it). */
const MISSED_BY_POLICY = /missed-run policy|stands for|run-once|catch-up|skip/;

/**
 * The problems with one run's final status, for the job's kind: an empty list when the status
 * is what the kind ends as, or has a reason this test caused.
 */
export function finalStatusProblems(
  job: AcceptedJob,
  run: RunResponse,
  events: readonly WorkerEvent[],
  faults: readonly Fault[],
  runs: readonly RunResponse[] = [run],
): string[] {
  const at = Date.parse(run.scheduledFor);
  const label = `${job.jobId}@${run.scheduledFor} (${job.kind})`;
  const expected = FINAL_BY_KIND[job.kind];
  if (!expected) return [`${label}: a kind the books do not know`];
  const error = run.error ?? "";
  const byPolicy = overlapEndingProblems(job, run, runs);
  if (byPolicy) return byPolicy;

  if (run.status === "cancelled") {
    return job.cancelSentAt === undefined ? [`${label}: cancelled, but its job was never cancelled`] : [];
  }
  if (run.status === "missed" && error === PAUSED_RUN_REASON) {
    return inPause(job, at) || pausedWhileHeldUp(job, at, faults)
      ? []
      : [`${label}: missed as paused, but its job was not paused then`];
  }
  if (run.status === "missed" && MISSED_BY_POLICY.test(error) && !MISSED_BY_LATENESS.test(error)) {
    // run-once: a cron firing left overdue by a pause or an outage, a later run standing for
    // it. A one-off job has one firing, which its policy always keeps.
    if (job.schedule !== "cron")
      return [`${label}: a one-off run missed by the missed-run policy (${error})`];
    const outage = faults.some(
      (f) => f.kind === "runtime-kill" && f.backAt >= at - OUTAGE_REACH_MS && f.at <= at + OUTAGE_REACH_MS,
    );
    return outage || inPause(job, at)
      ? []
      : [`${label}: missed by the missed-run policy (${error}) with no outage or pause then`];
  }
  if (run.status === "lost") {
    // At-most-once at some moment of the run's life (created so, or PATCHed), beside a fault.
    const life = { from: at - HANDOVER_MS, to: Date.parse(run.finishedAt ?? "") || Number.POSITIVE_INFINITY };
    if (!atMostOnceDuring(job, life.from, life.to))
      return [`${label}: recorded lost, but its job was at-least-once`];
    return lostExplained(run.runId, at, events, faults)
      ? []
      : [`${label}: recorded lost with no fault to lapse its lease`];
  }
  if (job.kind === "slow-heartbeats" && run.status === "dead-lettered" && LAPSES_EXHAUSTED.test(error)) {
    // Its 5 s leases, kept by heartbeats, lapse when a fault cuts them (a runtime kill is down
    // for up to 8 s): a run every one of whose maxAttempts leases a fault cut is dead-lettered,
    // as the lease step must do. Any execution no fault explains fails it.
    return lapsesExplained(run.runId, events, faults, job)
      ? []
      : [`${label}: dead-lettered by lapsed leases (${error}), one of them with no fault to lapse it`];
  }
  if (!expected.includes(run.status)) {
    return [`${label}: ended ${run.status}${error ? ` (${error})` : ""}, expected ${expected.join(" or ")}`];
  }
  if (run.status === "missed" && !MISSED_BY_LATENESS.test(error)) {
    return [`${label}: missed for "${error}", not for its maxLateness`];
  }
  if (run.status === "missed") {
    // Recorded missed for lateness: the record itself was written more than maxLateness late.
    const recordedLate = Date.parse(run.finishedAt ?? "") - at;
    if (!(recordedLate + INSTANT_ROUNDING_MS > LATE_IS_MISSED_MS)) {
      return [`${label}: missed for lateness, but recorded ${recordedLate} ms after it was due`];
    }
  }
  if (job.kind === "late-is-missed" && run.status === "succeeded" && run.fence === 1) {
    // The documented rule (README, maxLateness): the lease step records a first attempt missed
    // when it could only start late. A run leased once was leased at `startedAt`, so that is
    // within maxLateness. (A later lease is a retry's or a lapsed lease's: late by design.)
    const leasedLate = Date.parse(run.startedAt ?? "") - at;
    if (!(leasedLate <= LATE_IS_MISSED_MS + INSTANT_ROUNDING_MS)) {
      return [
        `${label}: succeeded, its only lease ${leasedLate} ms late (maxLateness ${LATE_IS_MISSED_MS} ms)`,
      ];
    }
  }
  return [];
}
