import { pauseRequest } from "@jobsched/contract";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { ConflictError } from "../errors";
import { type AuditEntry, type Job, JobStatus, MAX_AUDIT_ENTRIES } from "../job";
import { parseWith } from "../validation";
import { nextRunShown } from "../views";
import { recordCancelledFirings } from "./cancelled-firings";
import { fireNearTerm } from "./create-job";
import { settleLastRun as settleFinished } from "./end-job";
import { callersJob, viewOf } from "./get-job";
import { refuseWhileRunIsCreated } from "./run-in-creation";
import { cancelRunsAhead, runsAhead } from "./runs-ahead";

/**
 * Pause, resume and cancel. Each is a read, a decision, and a write conditional on the job not
 * having changed since the read (its updatedAt), retried a few times if a sweep moved the job
 * meanwhile. Repeating an action is harmless: pausing a paused job answers it as it is.
 *
 * - pause: the job leaves the due index, so no run is created; runs already queued but not
 *   started are recorded as missed when a worker would have got them. An optional reason is
 *   kept in the audit entry and shown on the job while it stays paused.
 * - resume: the job returns to the index; firings that fell in the pause are handled by its
 *   missed-run policy at the next sweep (or at once, if one is due now).
 * - cancel: for good. No run is leased after the answer; a run leased before it (handed over
 *   up to EARLY_HOLD_MS ahead and held by the worker, decision 0014) may still start.
 *   Firings of an active job that were already due but not yet swept into runs (the sweeper
 *   was behind, or down) get a cancelled run each, so every due firing is accounted for.
 */
export type JobAction = "pause" | "resume" | "cancel";

const ATTEMPTS = 5;

interface Transition {
  readonly from: readonly string[];
  readonly to: Job["status"];
  readonly audit: AuditEntry["action"];
}

const TRANSITIONS: Readonly<Record<JobAction, Transition>> = {
  pause: { from: [JobStatus.Active], to: JobStatus.Paused, audit: "paused" },
  resume: { from: [JobStatus.Paused], to: JobStatus.Active, audit: "resumed" },
  cancel: { from: [JobStatus.Active, JobStatus.Paused], to: JobStatus.Cancelled, audit: "cancelled" },
};

/**
 * Where a paused recurring job resumes from: its first firing from now, not the end of the
 * block already made (decision 0044). Firings of the block that come due in the pause are
 * recorded missed by the lease step; on resume, the job's missed-run policy looks at them as
 * at any firing of the pause, and runs again those it keeps (fire-jobs.ts).
 */
const resumesFrom = nextRunShown;

/** The reason a run made ahead is cancelled with its job. */
export const CANCELLED_AHEAD_REASON = "the job was cancelled before the run was due";

export async function controlJob(
  deps: SchedulerDeps,
  caller: Caller,
  jobId: string,
  action: JobAction,
  body: unknown = {},
) {
  const transition = TRANSITIONS[action];
  const reason = action === "pause" ? parseWith(pauseRequest, body).reason : undefined;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const job = await callersJob(deps, caller, jobId);
    if (job.status === transition.to) return view(deps, job); // already there: nothing to do
    if (!transition.from.includes(job.status)) {
      throw new ConflictError(`job ${jobId} is ${job.status}; it cannot be ${transition.audit}`, "jobId");
    }

    if (action !== "resume") await refuseWhileRunIsCreated(deps, job, "unsent");
    const now = Math.max(deps.clock.now(), job.updatedAt + 1);
    // A cancelled job keeps a next run only if it is overdue: firings to record (see
    // recordCancelledFirings). Recorded after the cancel, not before: a record written for a
    // cancel that then lost its race would stop the sweeper from creating the real run.
    const overdue = job.status === JobStatus.Active && job.nextRunAt !== undefined && job.nextRunAt <= now;
    const changed: Job = {
      ...job,
      status: transition.to,
      nextRunAt:
        action === "cancel" && !overdue
          ? undefined
          : action === "pause"
            ? resumesFrom(job, now)
            : job.nextRunAt,
      updatedAt: now,
      version: job.version + 1,
      audit: [
        ...job.audit,
        {
          action: transition.audit,
          by: caller.principal,
          at: now,
          ...(reason === undefined ? {} : { reason }),
        },
      ].slice(-MAX_AUDIT_ENTRIES),
    };
    if (!(await deps.jobs.replaceJob(changed, job.updatedAt))) continue; // changed under us: read again

    if (action === "cancel") {
      await recordCancelledFirings(deps, changed, now);
      // Every firing's run not started, not only those ahead: one orphaned before its send would
      // otherwise stay pending (its job out of the due index); the lease step would cancel the others.
      const { unstarted } = await runsAhead(deps, job, now);
      await cancelRunsAhead(deps, unstarted, CANCELLED_AHEAD_REASON, now);
    }
    if (action === "resume" && changed.nextRunAt !== undefined) {
      if (changed.nextRunAt < now + deps.settings.lookaheadSeconds * 1000) {
        await fireNearTerm(deps, { ...changed, nextRunAt: changed.nextRunAt });
      }
    }
    deps.log.info(`job ${transition.audit}`, { jobId, by: caller.principal });
    // A resumed job with no firing left may end right here: answer it as it now is.
    if (action === "resume" && changed.nextRunAt === undefined) {
      if (await settleLastRun(deps, changed, caller, now)) {
        return view(deps, (await deps.jobs.getJob(jobId)) ?? changed);
      }
    }
    return view(deps, changed);
  }
  throw new ConflictError(`job ${jobId} kept changing; try again`, "jobId");
}

/** A resumed job with no firing left ends with its last run, or re-runs it (settleLastRun). */
async function settleLastRun(deps: SchedulerDeps, job: Job, caller: Caller, now: number): Promise<boolean> {
  const [last] = await deps.runs.listRecentRuns(job.jobId, 1);
  if (!last) return false;
  return settleFinished(deps, job, last, caller.principal, now);
}

async function view(deps: SchedulerDeps, job: Job) {
  return viewOf(deps, job);
}
