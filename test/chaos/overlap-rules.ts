import type { RunResponse } from "@jobsched/contract";
import { EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import type { AcceptedJob } from "./chaos-events";
import { atMostOnceDuring, settingsDuring } from "./job-settings";

/**
 * The endings an overlap policy or a delivery mode allows (README, overlapPolicy and delivery;
 * decisions 0025 and 0026), each only where the job's history explains it:
 *
 * - `skipped`, "the run of X was still unfinished (overlapPolicy skip)": the run never started
 *   (the contract's "never started": fence 0), the job was `skip` when it was recorded, and X is
 *   an earlier run of the job that had not finished then (a run older than the job's active run
 *   waits for it, it is never skipped against it: decision 0037);
 * - `skipped`, "... and another run waits for it (overlapPolicy buffer-one)": the same under
 *   `buffer-one`, and a third run of the job, due by then, still waited (had neither been
 *   leased nor finished) when this one was skipped;
 * - `cancelled`, "the run of Z replaced it (overlapPolicy cancel-previous)": the job was
 *   `cancel-previous` when it was recorded, Z is a later run of the job, and Z was leased;
 * - none of these for a job's last run, which waits instead (it is what ends the job);
 * - `dead-lettered` "(at-most-once: not retried)": a failed attempt while the job was
 *   at-most-once, or a retry that waited when the job was PATCHed to at-most-once;
 * - `lost`: only while the job was at-most-once (and, kind-rules.ts, beside a fault).
 */

/** The API's instants may drop their milliseconds. */
const ROUNDING_MS = 1_000;
const SKIPPED =
  /the run of (\S+) was still unfinished( and another run waits for it)? \(overlapPolicy (skip|buffer-one)\)/;
export const REPLACED = /the run of (\S+) replaced it \(overlapPolicy cancel-previous\)/;
/**
 * buffer-one's skip when the active run is over but for its record (its lease lapsed, it never
 * starts again): the run it wakes goes first, and a newer run finds the buffer taken
 * (overlap-decision.ts).
 */
const WAITS_FIRST = /the run of (\S+) waits to start first \(overlapPolicy buffer-one\)/;
/**
 * A failed attempt of an at-most-once job ("... (at-most-once: not retried)"), or a retry that
 * waited when its job was PATCHed to at-most-once (issue 27's finding 2, dead-lettered since
 * decision 0037: "its job became at-most-once while a retry waited: not run again").
 */
const NOT_RETRIED = /at-most-once: not retried|became at-most-once while a retry waited/;
/** The mix's kinds whose handler fails an attempt (the others never fail). */
const FAILING_KINDS = new Set(["retry-once", "retry-patched", "exhausts-retries", "permanent"]);

const timeOf = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));

/** Whether `run` is its job's last (one-off: its only one; cron: the one at endAt). */
function isLast(job: AcceptedJob, scheduledFor: number): boolean {
  return job.schedule === "once" || scheduledFor === job.endAt;
}

function unfinishedAt(run: RunResponse, at: number): boolean {
  const finished = timeOf(run.finishedAt);
  return finished === undefined || finished >= at - ROUNDING_MS;
}

/**
 * The problems with an ending an overlap policy or the delivery mode gives; undefined when the
 * run's ending is not one of those (the kind's own rules then decide).
 */
export function overlapEndingProblems(
  job: AcceptedJob,
  run: RunResponse,
  runs: readonly RunResponse[],
): string[] | undefined {
  const label = `${job.jobId}@${run.scheduledFor} (${job.kind})`;
  const at = Date.parse(run.scheduledFor);
  const recordedAt = timeOf(run.finishedAt) ?? Number.POSITIVE_INFINITY;
  const error = run.error ?? "";
  const policiesThen = new Set(settingsDuring(job, recordedAt).map((s) => s.overlapPolicy));
  const runAt = (iso: string) => runs.find((r) => Date.parse(r.scheduledFor) === Date.parse(iso));

  if (run.status === "skipped" && WAITS_FIRST.test(error)) {
    const [, waiterIso = ""] = WAITS_FIRST.exec(error) ?? [];
    const problems: string[] = [];
    if (!policiesThen.has("buffer-one"))
      problems.push(
        `${label}: skipped under buffer-one, but the job was ${[...policiesThen].join(" or ")} then`,
      );
    if (isLast(job, at)) problems.push(`${label}: the job's last run skipped (it should have waited)`);
    if (run.fence > 0)
      problems.push(
        `${label}: skipped after it was leased ${run.fence} time(s) (a started run is not skipped)`,
      );
    const waiter = runAt(waiterIso);
    if (!waiter || Date.parse(waiter.scheduledFor) >= at)
      problems.push(`${label}: skipped for the run of ${waiterIso}, which is not an earlier run of the job`);
    else if (!unfinishedAt(waiter, recordedAt))
      problems.push(
        `${label}: skipped at ${run.finishedAt}, but the run of ${waiterIso} had finished at ${waiter.finishedAt}`,
      );
    return problems;
  }

  if (run.status === "skipped") {
    const match = SKIPPED.exec(error);
    if (!match) return [`${label}: skipped for a reason no overlap policy gives (${error})`];
    const [, holderIso = "", waiter, policy = ""] = match;
    const problems: string[] = [];
    if ((policy === "buffer-one") !== (waiter !== undefined))
      problems.push(`${label}: ${policy} with the wrong reason`);
    if (!policiesThen.has(policy as "skip")) {
      problems.push(
        `${label}: skipped under ${policy}, but the job was ${[...policiesThen].join(" or ")} then`,
      );
    }
    if (isLast(job, at)) problems.push(`${label}: the job's last run skipped (it should have waited)`);
    if (run.fence > 0)
      problems.push(
        `${label}: skipped after it was leased ${run.fence} time(s) (a started run is not skipped)`,
      );
    const holder = runAt(holderIso);
    if (!holder || Date.parse(holder.scheduledFor) >= at) {
      problems.push(`${label}: skipped for the run of ${holderIso}, which is not an earlier run of the job`);
    } else if (!unfinishedAt(holder, recordedAt)) {
      problems.push(
        `${label}: skipped at ${run.finishedAt}, but the run of ${holderIso} had finished at ${holder.finishedAt}`,
      );
    }
    if (policy === "buffer-one" && holder) {
      const waits = runs.some((w) => {
        const leased = timeOf(w.startedAt);
        return (
          w.runId !== run.runId &&
          w.runId !== holder.runId &&
          Date.parse(w.scheduledFor) <= recordedAt + EARLY_HOLD_MS &&
          (leased === undefined || leased >= recordedAt - ROUNDING_MS) &&
          unfinishedAt(w, recordedAt)
        );
      });
      if (!waits)
        problems.push(
          `${label}: skipped as buffer-one's second waiter, but no other run of the job waited then`,
        );
    }
    return problems;
  }

  if (run.status === "cancelled" && REPLACED.test(error)) {
    const [, byIso = ""] = REPLACED.exec(error) ?? [];
    const problems: string[] = [];
    if (!policiesThen.has("cancel-previous")) {
      problems.push(
        `${label}: replaced under cancel-previous, but the job was ${[...policiesThen].join(" or ")} then`,
      );
    }
    if (isLast(job, at)) problems.push(`${label}: the job's last run revoked`);
    const by = runAt(byIso);
    if (!by || Date.parse(by.scheduledFor) <= at) {
      problems.push(`${label}: revoked by the run of ${byIso}, which is not a later run of the job`);
    } else if (by.startedAt === undefined) {
      problems.push(`${label}: revoked by the run of ${byIso}, which was never leased`);
    }
    return problems;
  }

  if (run.status === "dead-lettered" && NOT_RETRIED.test(error)) {
    if (!FAILING_KINDS.has(job.kind)) return [`${label}: dead-lettered, but its handler never fails`];
    return atMostOnceDuring(job, recordedAt)
      ? []
      : [`${label}: dead-lettered as at-most-once, but the job was at-least-once then`];
  }
  return undefined;
}
