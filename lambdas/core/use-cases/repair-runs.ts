import { baseLeadSecondsOf, delaySecondsAfter, delaySecondsUntil, runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { JobStatus } from "../job";
import { allRepairKeys } from "../keys";
import { isUnfinished } from "../lifecycle/transition";
import type { RepairCandidate } from "../ports";
import { availableAt, RunStatus } from "../run";
import { endJobAfter, endJobOnMessage, settleLastRun } from "./end-job";

/** Candidates read per repair partition and page. */
const PAGE = 100;

/**
 * A run whose message may just be waiting in a busy lane (a backlog, a type no worker serves)
 * is looked at again after this, and re-sent at most once per such interval.
 */
export const BUSY_LANE_RECHECK_MS = 3_600_000;
/** A paused job's finished last run is looked at again after this (its resume ends the job). */
export const PAUSED_RECHECK_MS = 3_600_000;
/** One repair pass stops starting work after this: the tick has other things to do in its minute. */
export const REPAIR_BUDGET_MS = 20_000;
/** The most runs one tenant gets re-sent in one pass: its flood never crowds out the others. */
export const RESENDS_PER_TENANT = 1_000;

export interface RepairStats {
  readonly inspected: number;
  readonly resent: number;
  readonly rescheduled: number;
  /** Finished last runs whose job had not been marked (its finisher died first): marked now. */
  readonly settled: number;
  /** Runs left for a later pass: their tenant's cap was reached, or the budget ran out. */
  readonly deferred: number;
  /** Runs or partitions whose repair failed (logged); the pass went on with the others. */
  readonly errors: number;
  /** Whether every partition was read to its end within the budget. */
  readonly finished: boolean;
}

type Action = "resent" | "rescheduled" | "settled" | "skipped" | "deferred";

/**
 * Re-delivers runs whose message was lost or never sent, and ends jobs whose last run finished
 * but could not end its job then (paused, or not yet moved past it; or its finisher died, for
 * a last run the index held). DynamoDB is the source of truth: every unfinished run that
 * nothing else re-drives (a retry, a manual run, a backfill, a replay; a firing's runs, its
 * job's last included, are carried by their message, decisions 0043 and 0045) sits
 * in the repair index under the time by which something should have happened to it. When that time passes and the run is still pending, or its lease lapsed
 * and nobody leased it again, its message is presumed lost, unless its lane has messages
 * waiting to be received: then it most likely waits its turn behind others (or for a worker
 * of its type),
 * and is looked at again an hour later, re-sent at most once an hour while the lane stays busy.
 * A copy that turns out not to be lost is dropped by the lease step, so a resend never runs a
 * run twice at once.
 *
 * A pass has a time budget, starts at a different partition each minute (so a budget that
 * runs out does not always starve the same ones), re-sends at most RESENDS_PER_TENANT runs of
 * a tenant, and isolates failures: one run or partition that fails is logged and skipped.
 *
 * `queueWasReset` is for a queue that may have lost messages (the local SQS emulator keeps
 * nothing across restarts; the local runtime's journal restores what it accepted, decision
 * 0051): every unfinished written run is re-sent at once, due when it was due. A run made and
 * not written has no item to re-send from: the journal is what keeps it.
 */
export async function repairRuns(
  deps: SchedulerDeps,
  options: { readonly queueWasReset?: boolean; readonly budgetMs?: number } = {},
): Promise<RepairStats> {
  const now = deps.clock.now();
  const deadline = now + (options.budgetMs ?? REPAIR_BUDGET_MS);
  const before = options.queueWasReset ? Number.MAX_SAFE_INTEGER : now;
  const stats = {
    inspected: 0,
    resent: 0,
    rescheduled: 0,
    settled: 0,
    deferred: 0,
    errors: 0,
    finished: true,
  };
  const context: PassContext = {
    now,
    queueWasReset: options.queueWasReset === true,
    backlogs: new Map(),
    resentByTenant: new Map(),
  };
  const keys = allRepairKeys();
  const first = Math.floor(now / 60_000) % keys.length;
  const rotated = [...keys.slice(first), ...keys.slice(0, first)];
  for (const repairKey of rotated) {
    // A resent run moves to a later check time and may show up again further down the pages.
    const seen = new Set<string>();
    let cursor: string | undefined;
    try {
      do {
        if (deps.clock.now() >= deadline) {
          stats.finished = false;
          break;
        }
        const page = await deps.runs.queryRepairCandidates(repairKey, before, PAGE, cursor);
        for (const candidate of page.items) {
          if (seen.has(candidate.runId)) continue;
          seen.add(candidate.runId);
          stats.inspected += 1;
          const action = await repairOne(deps, candidate, context).catch((error: unknown) => {
            deps.log.error("repair of a run failed", { runId: candidate.runId, error: String(error) });
            stats.errors += 1;
            return "skipped" as const;
          });
          if (action !== "skipped") stats[action] += 1;
        }
        cursor = page.cursor;
      } while (cursor !== undefined);
    } catch (error) {
      deps.log.error("repair of a partition failed", { repairKey, error: String(error) });
      stats.errors += 1;
    }
    if (!stats.finished) break;
  }
  if (options.queueWasReset) stats.resent += await resendUntracked(deps, now);
  if (stats.resent > 0 || stats.settled > 0 || stats.errors > 0 || !stats.finished)
    deps.log.info("repair pass", { ...stats });
  return stats;
}

interface PassContext {
  readonly now: number;
  readonly queueWasReset: boolean;
  /** Lane backlogs, read once per pass. */
  readonly backlogs: Map<string, Promise<number>>;
  readonly resentByTenant: Map<string, number>;
}

async function repairOne(deps: SchedulerDeps, run: RepairCandidate, pass: PassContext): Promise<Action> {
  const { now } = pass;
  const graceMs = deps.settings.repairGraceSeconds * 1000;
  const leaseEnd = run.leaseExpiresAt ?? Number.NEGATIVE_INFINITY;
  const leaseLive = run.status === RunStatus.Leased && leaseEnd > now;

  if (leaseLive && !pass.queueWasReset) {
    // Heartbeats extend the lease without touching checkAt; look again after this lease.
    return (await deps.runs.rescheduleCheck(run, run.checkAt, leaseEnd + graceMs))
      ? "rescheduled"
      : "skipped";
  }
  if (run.status !== RunStatus.Pending && run.status !== RunStatus.Leased) {
    // Only a job's last run stays here finished: until its job is marked (see endJobAfter).
    // Its finisher may still be at it; marking twice is harmless. A job the sweep has not yet
    // moved past this run is looked at again after the grace; a paused one, whose resume ends
    // it, an hour later (should that resume die first, this check finishes its work).
    const job = await deps.jobs.getJob(run.jobId);
    if (job?.status === JobStatus.Active && job.nextRunAt === undefined) {
      const last = await deps.runs.getRun(run.jobId, run.scheduledFor);
      if (last && (await settleLastRun(deps, job, last, "repair", now))) return "settled";
    } else if (
      job?.status !== JobStatus.Paused &&
      (await endJobAfter(deps, run, { final: true, tracked: true }, now))
    ) {
      return "settled";
    }
    const later = job?.status === JobStatus.Paused ? PAUSED_RECHECK_MS : graceMs;
    return (await deps.runs.rescheduleCheck(run, run.checkAt, now + later)) ? "rescheduled" : "skipped";
  }

  const visibleAt = leaseLive ? leaseEnd : availableAt(run);
  const busy = !pass.queueWasReset && (await laneBacklog(deps, run, pass)) > 0;
  if (busy) {
    // Its message most likely waits in the lane. Look again in an hour; once it has waited an
    // hour past its first check, a copy goes out each time (a lost message in a lane that is
    // never empty is still found), at most once an hour.
    const waitedLong = now - (visibleAt + graceMs) >= BUSY_LANE_RECHECK_MS;
    if (!waitedLong) {
      return (await deps.runs.rescheduleCheck(run, run.checkAt, now + BUSY_LANE_RECHECK_MS))
        ? "rescheduled"
        : "skipped";
    }
  }
  const resentOfTenant = pass.resentByTenant.get(run.tenant) ?? 0;
  if (resentOfTenant >= RESENDS_PER_TENANT) return "deferred"; // check time untouched: next pass
  pass.resentByTenant.set(run.tenant, resentOfTenant + 1);

  // Claim the repair first: of two concurrent repair passes only one resends. A run re-sent
  // into a busy lane is looked at again an hour later; into an empty one, after the grace.
  const nextCheck = busy ? now + BUSY_LANE_RECHECK_MS : Math.max(now, visibleAt) + graceMs;
  if (!(await deps.runs.rescheduleCheck(run, run.checkAt, nextCheck))) return "skipped";
  // A held run's copy must not show up before the lease ends (the lease step would drop it).
  const delaySeconds = leaseLive
    ? delaySecondsAfter(leaseEnd, now)
    : delaySecondsUntil(visibleAt, now, baseLeadSecondsOf(run.type));
  await deps.queue.send([{ message: runMessageOf(run), delaySeconds }]);
  return "resent";
}

/** The run's lane's backlog, read once per pass; a lane that cannot be read counts as empty. */
function laneBacklog(deps: SchedulerDeps, run: RepairCandidate, pass: PassContext): Promise<number> {
  const key = `${run.tenant}\n${run.type}`;
  let backlog = pass.backlogs.get(key);
  if (!backlog) {
    backlog = deps.queue.laneBacklog(run.tenant, run.type).catch((error: unknown) => {
      deps.log.warn("lane backlog unknown; repairing as if the lane were empty", { error: String(error) });
      return 0;
    });
    pass.backlogs.set(key, backlog);
  }
  return backlog;
}

/**
 * After the queue lost every message (the local emulator's restart): re-sends the unfinished
 * runs the repair index does not hold, scheduled runs whose message was their only carrier
 * (decision 0043), each visible when it was due or its lease ends; and ends the active jobs
 * whose last run finished with no entry (its message was to re-drive that end: decision 0045).
 * A whole-table scan, so never in AWS, where SQS keeps its messages.
 */
async function resendUntracked(deps: SchedulerDeps, now: number): Promise<number> {
  let sent = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.runs.scanUntracked(PAGE, cursor);
    const unfinished = page.items.filter(isUnfinished);
    const messages = unfinished.map((run) => {
      const leaseEnd = run.status === RunStatus.Leased ? (run.leaseExpiresAt ?? now) : undefined;
      const delaySeconds =
        leaseEnd !== undefined && leaseEnd > now
          ? delaySecondsAfter(leaseEnd, now)
          : delaySecondsUntil(availableAt(run), now, baseLeadSecondsOf(run.type));
      return { message: runMessageOf(run), delaySeconds };
    });
    if (messages.length > 0) await deps.queue.send(messages);
    sent += messages.length;
    const lastRuns = page.items.filter((run) => !isUnfinished(run));
    const jobs = await deps.jobs.getJobs(lastRuns.map((run) => run.jobId));
    for (const run of lastRuns) {
      if (jobs.get(run.jobId)?.status === JobStatus.Active) await endJobOnMessage(deps, run, now);
    }
    cursor = page.cursor;
  } while (cursor !== undefined);
  return sent;
}
