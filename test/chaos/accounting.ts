import type { RunResponse } from "@jobsched/contract";
import { EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import { parseRunId } from "../../lambdas/core/ids";
import type { AcceptedJob, ChaosTenant, Fault, WorkerEvent } from "./chaos-events";
import { byDispatcher, type FaultBooks, faultBooks, HANDOVER_MS, jobOfRun } from "./fault-books";
import { atMostOnceDuring, onlyAtMostOnceDuring, settingsLabel } from "./job-settings";
import { finalStatusProblems, LATE_IS_MISSED_MS } from "./kind-rules";

/**
 * The crash-loop test's books: every accepted job against what the API says happened to it,
 * and every execution the workers logged against the fences the scheduler handed out.
 */
/** A run as the API lists it (the contract's run response). */
export type RunRow = RunResponse;

export interface JobState {
  /** HTTP status of GET /api/v1/jobs/{id}. */
  readonly found: boolean;
  readonly createdAt?: string;
  /** The job's status once drained: completed or cancelled when nothing is left to run. */
  readonly status?: string;
  readonly runs: readonly RunRow[];
}

const MINUTE = 60_000;
const TERMINAL = new Set(["succeeded", "dead-lettered", "missed", "cancelled", "skipped", "lost"]);
/** Statuses of runs that never ran to a completion: each must say why. */
const WITH_REASON = new Set(["missed", "cancelled", "skipped", "lost"]);

/** The payload kind of the mix's at-most-once jobs. */
export { AT_MOST_ONCE_KIND } from "./job-settings";

export interface Books extends FaultBooks {
  readonly jobs: number;
  readonly lost: string[];
  readonly dueRuns: number;
  readonly byStatus: Record<string, number>;
  readonly missedReasons: Record<string, number>;
  /** Due firings without a run, or runs not finished after the drain. */
  readonly unaccounted: string[];
  /** Runs of firings that should not have one (after a cancel, outside the schedule). */
  readonly unexpected: string[];
  readonly executions: number;
  /** Executions whose completion was never accepted: the run ran again (at least once). */
  readonly duplicateExecutions: number;
  readonly completions: Record<string, number>;
  readonly staleAccepted: string[];
  /** Recorded as succeeded though no worker ran it at that fence, or its handler failed there. */
  readonly outcomeWithoutCompletion: string[];
  /** Final run statuses by the job's kind (its payload; with its overlap policies and deliveries, if set). */
  readonly byKind: Record<string, Record<string, number>>;
  /** Runs whose final status is not what their kind ends as, with no reason the test caused. */
  readonly wrongFinalStatus: string[];
  /**
   * maxLateness runs leased in time whose worker began them past it (the hand-over came late):
   * printed, not asserted, as the documented rule is the lease's (README, maxLateness).
   */
  readonly startedPastMaxLateness: string[];
  /** Jobs still active after the drain with nothing left to run (their completion was cut short). */
  readonly activeWithNothingToRun: string[];
  /** Executions of a run by a worker not bound to the run's tenant. */
  readonly crossTenant: string[];
  /**
   * Runs executed more than once while their job was at-most-once throughout (from the first
   * execution's hand-over to the last's start): there must be none.
   */
  readonly atMostOnceRepeated: string[];
  /** Runs recorded lost (an at-most-once lease lapsed: the worker died or stopped mid-run). */
  readonly atMostOnceLost: number;
  /**
   * Executions started before their run was due (leases are handed over ahead since issue 14;
   * the worker must hold each run until then).
   */
  readonly startedEarly: string[];
  /** Push runs' deliveries (the receiver's log), and how many came again after the first. */
  readonly pushDeliveries: number;
  readonly pushRepeated: number;
}

/** The instants an every-minute UTC cron fires at, after `after` and up to `endAt`. */
function minutesBetween(after: number, endAt: number): number[] {
  const out: number[] = [];
  for (let at = Math.floor(after / MINUTE) * MINUTE + MINUTE; at <= endAt; at += MINUTE) out.push(at);
  return out;
}

/**
 * Firings that must have a run, may have one, and after which any run must be cancelled. A run
 * is handed to a worker up to EARLY_HOLD_MS before it is due and held there (decision 0014):
 * one handed over before the cancel was answered may still run, so only firings further than
 * that past the answer must be cancelled.
 */
function expectations(job: AcceptedJob, state: JobState) {
  const answered = (job.cancelAnsweredAt ?? Number.POSITIVE_INFINITY) + EARLY_HOLD_MS;
  if (job.schedule === "once") {
    const at = job.runAt as number;
    if (job.cancelSentAt !== undefined && job.cancelSentAt < at) {
      const late = answered >= at;
      return { required: [], optional: [at], cancelledAfter: late ? Number.POSITIVE_INFINITY : at - 1 };
    }
    return { required: [at], optional: [], cancelledAfter: Number.POSITIVE_INFINITY };
  }
  const createdAt = Date.parse(state.createdAt ?? "");
  const all = minutesBetween(createdAt, job.endAt as number);
  if (job.cancelSentAt === undefined)
    return { required: all, optional: [], cancelledAfter: Number.POSITIVE_INFINITY };
  const sent = job.cancelSentAt;
  return {
    required: all.filter((at) => at < sent),
    optional: all.filter((at) => at >= sent),
    cancelledAfter: answered,
  };
}

export function keepBooks(
  accepted: readonly AcceptedJob[],
  states: ReadonlyMap<string, JobState>,
  events: readonly WorkerEvent[],
  served: ReadonlyMap<string, readonly ChaosTenant[]>,
  faults: readonly Fault[],
): Books {
  const lost: string[] = [];
  const unaccounted: string[] = [];
  const unexpected: string[] = [];
  const byStatus: Record<string, number> = {};
  const missedReasons: Record<string, number> = {};
  const finalRows = new Map<string, RunRow>();
  const byKind: Record<string, Record<string, number>> = {};
  const activeWithNothingToRun: string[] = [];
  const wrongFinalStatus: string[] = [];
  const startedPastMaxLateness: string[] = [];
  let dueRuns = 0;

  for (const job of accepted) {
    const state = states.get(job.jobId);
    if (!state?.found) {
      lost.push(job.jobId);
      continue;
    }
    if (state.status === "active") activeWithNothingToRun.push(job.jobId);
    const rows = new Map(state.runs.map((run) => [Date.parse(run.scheduledFor), run]));
    const { required, optional, cancelledAfter } = expectations(job, state);
    const allowed = new Set([...required, ...optional]);
    for (const at of required) {
      if (!rows.has(at)) unaccounted.push(`${job.jobId}@${new Date(at).toISOString()}: no run`);
    }
    for (const [at, run] of rows) {
      const label = `${job.jobId}@${run.scheduledFor}`;
      if (!allowed.has(at)) {
        unexpected.push(`${label}: ${run.status} (not a firing of this job)`);
        continue;
      }
      if (at > cancelledAfter && run.status !== "cancelled") {
        unexpected.push(`${label}: ${run.status} after the job's cancel was answered`);
      }
      dueRuns += 1;
      finalRows.set(run.runId, run);
      byStatus[run.status] = (byStatus[run.status] ?? 0) + 1;
      const kind = byKind[settingsLabel(job)] ?? {};
      kind[run.status] = (kind[run.status] ?? 0) + 1;
      byKind[settingsLabel(job)] = kind;
      if (!TERMINAL.has(run.status)) unaccounted.push(`${label}: still ${run.status}`);
      else wrongFinalStatus.push(...finalStatusProblems(job, run, events, faults, state.runs));
      if (job.kind === "late-is-missed" && run.status === "succeeded") {
        const start = events.find((e) => e.e === "start" && e.runId === run.runId && e.fence === run.fence);
        if (start && start.at - at > LATE_IS_MISSED_MS) {
          startedPastMaxLateness.push(
            `${label}: leased in time, begun by ${start.worker} ${start.at - at} ms late`,
          );
        }
      }
      if (WITH_REASON.has(run.status) && !run.error) {
        unaccounted.push(`${label}: ${run.status} without a reason`);
      }
      const life = {
        from: at - HANDOVER_MS,
        to: Date.parse(run.finishedAt ?? "") || Number.POSITIVE_INFINITY,
      };
      if (run.status === "lost" && !atMostOnceDuring(job, life.from, life.to)) {
        unexpected.push(`${label}: lost, but the job was at-least-once throughout`);
      }
      if (WITH_REASON.has(run.status)) {
        const reason = `${run.status}: ${(run.error ?? "").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>")}`;
        missedReasons[reason] = (missedReasons[reason] ?? 0) + 1;
      }
    }
  }

  return {
    jobs: accepted.length,
    lost,
    dueRuns,
    byStatus,
    missedReasons,
    unaccounted,
    unexpected,
    byKind,
    wrongFinalStatus,
    startedPastMaxLateness,
    activeWithNothingToRun,
    crossTenant: crossTenantExecutions(accepted, events, served),
    startedEarly: earlyStarts(events),
    ...atMostOnceBooks(accepted, events, finalRows),
    ...executionBooks(events, finalRows),
    ...faultBooks(accepted, events, faults, finalRows),
  };
}

/**
 * At-most-once: no run executed twice while its job was at-most-once throughout (a run whose
 * executions began under at-least-once, before a PATCH, may have been retried then), and how
 * many runs were recorded lost.
 */
function atMostOnceBooks(
  accepted: readonly AcceptedJob[],
  events: readonly WorkerEvent[],
  finalRows: ReadonlyMap<string, RunRow>,
) {
  const jobs = new Map(accepted.map((job) => [job.jobId, job]));
  const starts = new Map<string, Array<{ fence: number; at: number }>>();
  for (const event of events) {
    if (event.e !== "start" || !jobs.has(jobOfRun(event.runId))) continue;
    starts.set(event.runId, [...(starts.get(event.runId) ?? []), { fence: event.fence, at: event.at }]);
  }
  const atMostOnceRepeated: string[] = [];
  for (const [runId, list] of starts) {
    const job = jobs.get(jobOfRun(runId));
    if (list.length < 2 || !job) continue;
    const from = Math.min(...list.map((s) => s.at)) - HANDOVER_MS;
    const to = Math.max(...list.map((s) => s.at));
    if (!onlyAtMostOnceDuring(job, from, to)) continue;
    atMostOnceRepeated.push(
      `${runId}: at-most-once, executed ${list.length} times (fences ${list.map((s) => s.fence).join(", ")})`,
    );
  }
  const atMostOnceLost = [...finalRows.values()].filter((row) => row.status === "lost").length;
  return { atMostOnceRepeated, atMostOnceLost };
}

/** Every execution that began before its run's scheduled instant (the run id carries it). */
function earlyStarts(events: readonly WorkerEvent[]): string[] {
  return events.flatMap((event) => {
    if (event.e !== "start") return [];
    const scheduledFor = parseRunId(event.runId)?.scheduledFor;
    if (scheduledFor === undefined || event.at >= scheduledFor) return [];
    return [`${event.runId}: started ${scheduledFor - event.at} ms before it was due (fence ${event.fence})`];
  });
}

/** Every execution whose worker does not serve the tenant of the run's job (there must be none). */
function crossTenantExecutions(
  accepted: readonly AcceptedJob[],
  events: readonly WorkerEvent[],
  served: ReadonlyMap<string, readonly ChaosTenant[]>,
): string[] {
  const tenantOf = new Map(accepted.map((job) => [job.jobId, job.tenant]));
  return events.flatMap((event) => {
    if (event.e !== "start") return [];
    // A run id names its job: r_<job id suffix>_<scheduled ms>.
    const jobId = `j_${event.runId.split("_")[1] ?? ""}`;
    const tenant = tenantOf.get(jobId);
    const ok = tenant !== undefined && (served.get(event.worker) ?? []).includes(tenant);
    return ok ? [] : [`${event.runId}: run of tenant ${tenant ?? "?"} executed by ${event.worker}`];
  });
}

function executionBooks(events: readonly WorkerEvent[], finalRows: ReadonlyMap<string, RunRow>) {
  const starts = events.filter((e) => e.e === "start");
  const pushStarts = starts.filter(byDispatcher);
  const dones = events.filter((e) => e.e === "done");
  const completions: Record<string, number> = {};
  for (const done of dones) {
    const key = typeof done.status === "number" ? `HTTP ${done.status}` : done.status;
    completions[key] = (completions[key] ?? 0) + 1;
  }
  const accepted = dones.filter((d) => d.status === 200);

  // A completion was accepted with a stale fence if some worker already held a newer lease of
  // the run when it was first sent: the scheduler had handed that lease out before it arrived.
  const staleAccepted: string[] = [];
  for (const done of accepted) {
    const newer = starts.find((s) => s.runId === done.runId && s.fence > done.fence && s.at < done.sentAt);
    if (newer)
      staleAccepted.push(`${done.runId}: fence ${done.fence} accepted after fence ${newer.fence} was leased`);
  }
  const fencesAccepted = new Map<string, number[]>();
  for (const done of accepted)
    fencesAccepted.set(done.runId, [...(fencesAccepted.get(done.runId) ?? []), done.fence]);
  for (const [runId, fences] of fencesAccepted) {
    if (new Set(fences).size !== fences.length) staleAccepted.push(`${runId}: one fence completed twice`);
  }

  // Every finished outcome a worker reported must be the one its run row shows, at the row's fence.
  // A run recorded as succeeded was executed at its final fence by a worker whose handler did not
  // fail there. (The worker need not have seen the answer: a kill can cut it off.)
  const outcomeWithoutCompletion: string[] = [];
  for (const [runId, row] of finalRows) {
    if (row.status !== "succeeded") continue;
    const ran = starts.some((s) => s.runId === runId && s.fence === row.fence);
    const failed = dones.some((d) => d.runId === runId && d.fence === row.fence && d.result === "failed");
    if (!ran || failed) {
      const why = ran ? "where its handler failed" : "where no worker ran it";
      outcomeWithoutCompletion.push(`${runId}: succeeded at fence ${row.fence}, ${why}`);
    }
  }

  // Workers' executions against their accepted completions; the dispatcher's completions are
  // not logged (it is in the runtime), so its deliveries are counted apart.
  const executionsOf = new Map<string, number>();
  for (const start of starts.filter((s) => !byDispatcher(s)))
    executionsOf.set(start.runId, (executionsOf.get(start.runId) ?? 0) + 1);
  const acceptedOf = new Map<string, number>();
  for (const done of accepted) acceptedOf.set(done.runId, (acceptedOf.get(done.runId) ?? 0) + 1);
  let duplicateExecutions = 0;
  for (const [runId, count] of executionsOf)
    duplicateExecutions += Math.max(0, count - (acceptedOf.get(runId) ?? 0));

  return {
    executions: starts.length,
    pushDeliveries: pushStarts.length,
    pushRepeated: pushStarts.length - new Set(pushStarts.map((s) => s.runId)).size,
    duplicateExecutions,
    completions,
    staleAccepted,
    outcomeWithoutCompletion,
  };
}
