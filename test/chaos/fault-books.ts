import type { RunResponse } from "@jobsched/contract";
import { DELIVERY_LEAD_SECONDS, EARLY_HOLD_MS } from "../../lambdas/core/delivery";
import type { AcceptedJob, AwsFault, Fault, WorkerEvent } from "./chaos-events";
import { REPLACED } from "./overlap-rules";

/**
 * The crash loop's second set of books: every execution that did not end in an accepted
 * completion, every run whose handler succeeded twice, and every push delivery made again must
 * be explained by a fault the loop injected (a runtime kill, a worker stopped past its lease or
 * killed, a DynamoDB or SQS request of that run failed by the runtime's fault injection), by
 * the job's cancel, or by a newer run revoking it (overlapPolicy cancel-previous). At-least-once
 * allows repeats only where something failed; a repeat with no fault beside it is a bug (a
 * lease handed out twice, a lost completion).
 *
 * An injected AWS fault explains only what happened to the run its request was about (or to a
 * run of its job, for a request that named no run: a job read, say), and only inside that
 * execution's window: a throttled DeleteMessage of the run's message, a completion write whose
 * answer was lost so that its retry met its own effect, a heartbeat held up past a short lease.
 */

type Start = Extract<WorkerEvent, { e: "start" }>;
type Done = Extract<WorkerEvent, { e: "done" }>;

/**
 * How long before its start a run's lease is handed over: the crash loop's seconds are sparse,
 * so a run's message is visible its base lead (plus SQS's whole-second rounding) before it is
 * due, and the worker holds it until then. A fault before that cannot touch the execution.
 */
export const HANDOVER_MS = (DELIVERY_LEAD_SECONDS + 2) * 1000;
/** After the runtime answers again, leases held through its outage may still lapse this long. */
export const RECOVERY_MS = 5_000;
/** A lost at-most-once run with no execution: its lease was granted this long around its due time. */
const LOST_WINDOW_MS = 60_000;

/** One execution: its start, and its completion's outcome as its worker logged it (if any). */
interface Execution {
  readonly start: Start;
  readonly done: Done | undefined;
}

/** The interval an execution could be hurt by a fault: from its lease's hand-over to its answer. */
const windowOf = ({ start, done }: Execution) => ({
  from: start.at - HANDOVER_MS,
  to: done?.at ?? Number.POSITIVE_INFINITY,
});

const overlaps = (a: { from: number; to: number }, b: { from: number; to: number }) =>
  a.from <= b.to && b.from <= a.to;

export const jobOfRun = (runId: string) => `j_${runId.split("_")[1] ?? ""}`;

/** Whether an injected AWS fault was about this run (or its job, when it named no run). */
export function aboutRun(fault: AwsFault, runId: string): boolean {
  return fault.runs.includes(runId) || (fault.runs.length === 0 && fault.jobs.includes(jobOfRun(runId)));
}

/** An injected AWS fault on one of the run's requests, within `window`. */
const awsFaultOn = (fault: Fault, runId: string, window: { from: number; to: number }) =>
  fault.kind === "aws-fault" &&
  aboutRun(fault, runId) &&
  overlaps(window, { from: fault.at, to: fault.until });

/** The API's instants may drop their milliseconds. */
const ROUNDING_MS = 1_000;

/**
 * Whether the execution's run was revoked by a newer one (cancel-previous) inside its window:
 * its refused completion is that policy working, not a repeat.
 */
function revokedDuring(execution: Execution, row: RunResponse | undefined): boolean {
  if (row?.status !== "cancelled" || !REPLACED.test(row.error ?? "")) return false;
  const at = Date.parse(row.finishedAt ?? "");
  const window = windowOf(execution);
  return (
    execution.start.fence <= row.fence && at >= window.from - ROUNDING_MS && at <= window.to + ROUNDING_MS
  );
}
export const byDispatcher = (event: WorkerEvent) => event.worker.startsWith("dispatcher:");

/**
 * The fault (or cancel) that explains an execution ending without an accepted completion, as a
 * short label, or undefined when nothing does.
 */
export function explain(
  execution: Execution,
  faults: readonly Fault[],
  job: AcceptedJob | undefined,
  row?: RunResponse,
): string | undefined {
  const window = windowOf(execution);
  const worker = execution.start.worker;
  if (revokedDuring(execution, row)) return "revoked (cancel-previous)";
  for (const fault of faults) {
    if (fault.kind === "runtime-kill") {
      if (overlaps(window, { from: fault.at, to: fault.backAt + RECOVERY_MS })) return "runtime kill";
    } else if (fault.kind === "aws-fault") {
      if (awsFaultOn(fault, execution.start.runId, window)) return `aws ${fault.fault}`;
    } else if (fault.worker === worker) {
      if (fault.kind === "worker-stop" && overlaps(window, { from: fault.at, to: fault.until })) {
        return "worker stop";
      }
      // A kill cuts an execution short only if it came before the execution's answer was logged.
      if (fault.kind === "worker-kill" && execution.done === undefined && fault.at >= window.from) {
        return "worker kill";
      }
    }
  }
  if (job?.cancelSentAt !== undefined && job.cancelSentAt <= window.to) return "cancel";
  return undefined;
}

/**
 * Whether an execution was under way while a fault lasted: running (from its start to its
 * answer) during the runtime's outage, or its own worker's stop, or when its worker was killed,
 * or while a request about its run failed. Stricter than `explain` (no hand-over before the
 * start, no recovery after the outage, no cancel): the count of such executions bounds the
 * repeats the faults can cause, apart from the explanations.
 */
export function inFlightDuring(execution: Execution, fault: Fault): boolean {
  const running = { from: execution.start.at, to: execution.done?.at ?? Number.POSITIVE_INFINITY };
  if (fault.kind === "runtime-kill") return overlaps(running, { from: fault.at, to: fault.backAt });
  if (fault.kind === "aws-fault") return awsFaultOn(fault, execution.start.runId, running);
  if (fault.worker !== execution.start.worker) return false;
  if (fault.kind === "worker-stop") return overlaps(running, { from: fault.at, to: fault.until });
  return running.from <= fault.at && fault.at <= running.to;
}

/** Pairs each worker execution with the completion its worker logged for that run and fence. */
function executionsOf(events: readonly WorkerEvent[]): Execution[] {
  const dones = new Map<string, Done>();
  for (const event of events) {
    if (event.e !== "done" || event.result === "not-started") continue;
    const key = `${event.runId}#${event.fence}#${event.worker}`;
    if (!dones.has(key)) dones.set(key, event);
  }
  return events
    .filter((event): event is Start => event.e === "start" && !byDispatcher(event))
    .map((start) => ({ start, done: dones.get(`${start.runId}#${start.fence}#${start.worker}`) }));
}

export interface FaultBooks {
  /** Executions whose completion was never accepted (a repeat of the run, or cut short). */
  readonly unacceptedExecutions: number;
  /** Of those, how many each kind of fault explains. */
  readonly explainedBy: Record<string, number>;
  /**
   * Executions under way while some fault lasted (inFlightDuring), or revoked by a newer run:
   * the repeats' bound.
   */
  readonly duplicateBound: number;
  readonly unexplainedDuplicates: string[];
  /** Runs whose handler succeeded more than once, and those of them no fault explains. */
  readonly doubleSuccesses: number;
  readonly unexplainedDoubleSuccesses: string[];
  /** Push deliveries made again with neither a failed answer nor a kill before them. */
  readonly unexplainedPushRepeats: string[];
}

export function faultBooks(
  accepted: readonly AcceptedJob[],
  events: readonly WorkerEvent[],
  faults: readonly Fault[],
  finalRows: ReadonlyMap<string, RunResponse> = new Map(),
): FaultBooks {
  const jobs = new Map(accepted.map((job) => [job.jobId, job]));
  const executions = executionsOf(events);
  const explainedBy: Record<string, number> = {};
  const unexplainedDuplicates: string[] = [];
  let unacceptedExecutions = 0;
  for (const execution of executions) {
    if (execution.done?.status === 200) continue;
    unacceptedExecutions += 1;
    const runId = execution.start.runId;
    const why = explain(execution, faults, jobs.get(jobOfRun(runId)), finalRows.get(runId));
    if (why) explainedBy[why] = (explainedBy[why] ?? 0) + 1;
    else {
      const { runId, fence, worker, at } = execution.start;
      const answer = execution.done ? `answered ${execution.done.status}` : "no answer logged";
      unexplainedDuplicates.push(
        `${runId}: execution at fence ${fence} by ${worker} (started ${new Date(at).toISOString()}) ${answer}, and no fault or cancel explains it`,
      );
    }
  }
  const duplicateBound = executions.filter(
    (execution) =>
      faults.some((f) => inFlightDuring(execution, f)) ||
      revokedDuring(execution, finalRows.get(execution.start.runId)),
  ).length;

  return {
    unacceptedExecutions,
    explainedBy,
    duplicateBound,
    unexplainedDuplicates,
    ...doubleSuccessBooks(executions, faults),
    unexplainedPushRepeats: pushRepeats(events, faults),
  };
}

/**
 * A run's handler may succeed twice only where a fault fell between an execution and its
 * completion (the completion was refused or never arrived, so the run was leased again); and no
 * run may start again after a success of it was accepted.
 */
function doubleSuccessBooks(executions: readonly Execution[], faults: readonly Fault[]) {
  const byRun = new Map<string, Execution[]>();
  for (const execution of executions) {
    byRun.set(execution.start.runId, [...(byRun.get(execution.start.runId) ?? []), execution]);
  }
  let doubleSuccesses = 0;
  const unexplainedDoubleSuccesses: string[] = [];
  for (const [runId, runExecutions] of byRun) {
    const acceptedSuccess = runExecutions.find(
      (x) => x.done?.result === "succeeded" && x.done.status === 200,
    )?.done;
    if (acceptedSuccess) {
      for (const later of runExecutions) {
        if (later.start.fence > acceptedSuccess.fence && later.start.at > acceptedSuccess.at) {
          unexplainedDoubleSuccesses.push(
            `${runId}: started again at fence ${later.start.fence} after its success at fence ${acceptedSuccess.fence} was accepted`,
          );
        }
      }
    }
    const successes = runExecutions.filter((x) => x.done?.result === "succeeded");
    if (successes.length < 2) continue;
    doubleSuccesses += 1;
    for (const success of successes) {
      if (success.done?.status === 200) continue;
      // A fault between this execution's start and its refused completion (its worker stopped,
      // or the runtime down around it): a cancel ends a run, it does not run it again.
      const cut = faults.some(
        (f) =>
          inFlightDuring(success, f) ||
          (f.kind === "runtime-kill" &&
            overlaps(
              { from: success.start.at, to: success.done?.at ?? Number.POSITIVE_INFINITY },
              { from: f.at, to: f.backAt + RECOVERY_MS },
            )),
      );
      if (!cut) {
        unexplainedDoubleSuccesses.push(
          `${runId}: succeeded at fence ${success.start.fence} (answered ${success.done?.status}) and again, with no fault between that execution and its completion`,
        );
      }
    }
  }
  return { doubleSuccesses, unexplainedDoubleSuccesses };
}

/**
 * Each push delivery after a run's first must follow a failed answer to the one before it (the
 * receiver's 503, then a retry), a runtime kill between the two (the dispatcher is in it), or a
 * failed request about the run between them (its outcome write, its message's delete).
 */
function pushRepeats(events: readonly WorkerEvent[], faults: readonly Fault[]): string[] {
  const deliveries = new Map<string, Start[]>();
  for (const event of events) {
    if (event.e === "start" && byDispatcher(event)) {
      deliveries.set(event.runId, [...(deliveries.get(event.runId) ?? []), event]);
    }
  }
  const failedAnswers = new Set(
    events
      .filter((e) => e.e === "done" && byDispatcher(e) && e.result === "failed")
      .map((e) => `${e.runId}#${e.fence}`),
  );
  const problems: string[] = [];
  for (const [runId, list] of deliveries) {
    const sorted = [...list].sort((a, b) => a.at - b.at);
    for (let i = 1; i < sorted.length; i++) {
      const previous = sorted[i - 1] as Start;
      const current = sorted[i] as Start;
      const failed = failedAnswers.has(`${previous.runId}#${previous.fence}`);
      const between = { from: previous.at - HANDOVER_MS, to: current.at };
      const killed = faults.some(
        (f) =>
          (f.kind === "runtime-kill" && overlaps(between, { from: f.at, to: f.backAt + RECOVERY_MS })) ||
          awsFaultOn(f, runId, between),
      );
      if (!failed && !killed) {
        problems.push(
          `${runId}: delivered again at fence ${current.fence} after fence ${previous.fence} with no failed answer, runtime kill or failed request of the run between`,
        );
      }
    }
  }
  return problems;
}

/**
 * A run dead-lettered by its leases' lapses (`maxAttempts` of them, none completed): each of its
 * executions must have been cut short by a fault (a runtime kill over it, its worker stopped or
 * killed, a failed request about the run), as slow-heartbeats jobs' short leases are by the
 * kills. An execution with no fault over it would have kept its lease by heartbeats.
 */
export function lapsesExplained(
  runId: string,
  events: readonly WorkerEvent[],
  faults: readonly Fault[],
  job: AcceptedJob,
): boolean {
  const ran = executionsOf(events).filter((x) => x.start.runId === runId);
  return ran.length > 0 && ran.every((execution) => explain(execution, faults, job) !== undefined);
}

/**
 * A run of an at-most-once job recorded lost: its lease lapsed, which needs a fault (its worker
 * stopped or killed, the runtime down, a request about the run failed) during its executions
 * or, with none, around its due time.
 */
export function lostExplained(
  runId: string,
  scheduledFor: number,
  events: readonly WorkerEvent[],
  faults: readonly Fault[],
): boolean {
  const ran = executionsOf(events).filter((x) => x.start.runId === runId);
  if (ran.some((execution) => explain(execution, faults, undefined) !== undefined)) return true;
  const around = { from: scheduledFor - EARLY_HOLD_MS, to: scheduledFor + LOST_WINDOW_MS };
  return faults.some(
    (f) =>
      (f.kind === "runtime-kill" && overlaps(around, { from: f.at, to: f.backAt + RECOVERY_MS })) ||
      awsFaultOn(f, runId, around),
  );
}
