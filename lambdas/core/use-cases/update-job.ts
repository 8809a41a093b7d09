import type { UpdateJobResponse } from "@jobsched/contract";
import { createJobRequest, updateJobRequest } from "@jobsched/contract";
import stringify from "safe-stable-stringify";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { ConflictError, PreconditionFailedError, ValidationError } from "../errors";
import { formatInstant } from "../instant";
import { type Job, JobStatus, MAX_AUDIT_ENTRIES } from "../job";
import { definitionFromRequest, jitterSeedOf, requestFieldsOf } from "../job-definition";
import { missedRun } from "../lifecycle/creation";
import { madeRunsAfter } from "../made-runs";
import { MissedRunPolicy, planRuns } from "../missed-runs";
import { type Run, RunStatus } from "../run";
import { previewRuns } from "../schedule/preview";
import type { Schedule } from "../schedule/schedule";
import { firstRunAt, nextFiring } from "../schedule/schedule";
import { DEFAULT_TIME_ZONE } from "../schedule/schedule-input";
import { parseWith } from "../validation";
import { nextRunShown } from "../views";
import { fireNearTerm, MAX_PAST_RUN_AT_MS } from "./create-job";
import { callersJob, viewOf } from "./get-job";
import { refuseWhileRunIsCreated } from "./run-in-creation";
import { cancelRunsAhead, runsAhead, SUPERSEDED_REASON } from "./runs-ahead";

/**
 * PATCH /api/v1/jobs/{jobId}: changes a job in place (decision 0024). The patch is merged into
 * the job's definition as request fields and the result is checked by the create's own rules;
 * job id, type, history and idempotency key stay. With If-Match, a job whose version moved on
 * is refused (412); the write is conditional on the job being as read, and a sweep that moved
 * it meanwhile only makes the update read again.
 *
 * A schedule change applies from now: runs already created (due within the sweep's lookahead)
 * keep their instant, and the new schedule's first run is its first firing after now and after
 * the last run that exists. A paused job's firings of the old schedule that fell in the pause
 * are recorded missed, as nothing will run them. Payload and policies apply to every run not yet
 * handed to a worker.
 */
const ATTEMPTS = 5;
const PREVIEW_COUNT = 5;
const SCHEDULE_KINDS = ["runAt", "cron", "interval"] as const;
/** Fields that belong to one schedule kind, dropped from the definition when the kind changes. */
const KIND_FIELDS: Readonly<Record<(typeof SCHEDULE_KINDS)[number], readonly string[]>> = {
  runAt: ["cron", "interval", "timeZone", "dstPolicy", "startAt", "endAt"],
  cron: ["runAt", "interval"],
  interval: ["runAt", "cron", "timeZone", "dstPolicy"],
};

/** The job as it now is, the fields that changed, and its next runs before and after. */
export type UpdateResult = UpdateJobResponse;

export async function updateJob(
  deps: SchedulerDeps,
  caller: Caller,
  jobId: string,
  body: unknown,
  ifMatch: string | undefined,
): Promise<UpdateResult> {
  for (const fixed of ["type", "idempotencyKey"]) {
    if (typeof body === "object" && body !== null && Object.hasOwn(body, fixed)) {
      throw new ValidationError(`${fixed}: cannot be changed; create a new job`, fixed);
    }
  }
  const patch = parseWith(updateJobRequest, body);
  if (Object.keys(patch).length === 0)
    throw new ValidationError("body: name at least one field to change", "body");

  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const job = await callersJob(deps, caller, jobId);
    if (ifMatch !== undefined && !etagMatches(ifMatch, job.version)) {
      throw new PreconditionFailedError(
        `If-Match: job ${jobId} is at version ${etagOf(job)}; read it again and reapply the change`,
        "If-Match",
      );
    }
    if (job.status === JobStatus.Cancelled || job.status === JobStatus.Completed) {
      throw new ConflictError(`job ${jobId} is ${job.status}; it cannot be changed`, "jobId");
    }

    const before = requestFieldsOf(job);
    // A push job's type is its target's kind: another destination of the same kind only.
    if (patch.target !== undefined && patch.target.kind !== job.target?.kind) {
      throw new ValidationError(
        job.target === undefined
          ? "target: a worker job cannot become a push job (its type would change); create a new job"
          : `target.kind: must stay ${job.target.kind} (the kind is the job's type, which cannot change)`,
        job.target === undefined ? "target" : "target.kind",
      );
    }
    const merged = merge(before, patch);
    const request = parseWith(createJobRequest, job.target ? merged : { ...merged, type: job.type });
    const definition = definitionFromRequest(deps.settings, request, jitterSeedOf(job), {
      tenant: job.tenant,
      tenantAccounts: deps.tenantAccounts,
    });
    const after = requestFieldsOf(definition);
    const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])]
      .filter((field) => stringify(before[field]) !== stringify(after[field]))
      .sort();
    const from = deps.clock.now();
    if (changed.length === 0) return result(deps, job, [], job.schedule, from);

    const now = Math.max(from, job.updatedAt + 1);
    const scheduleChanged = stringify(job.schedule) !== stringify(definition.schedule);
    const {
      next: nextRunAt,
      superseded,
      kept,
      missedInPause,
    } = scheduleChanged
      ? await nextRunOfNewSchedule(deps, job, definition.schedule, now)
      : { next: job.nextRunAt, superseded: [], kept: [], missedInPause: [] };
    const updated: Job = {
      ...job,
      ...definition,
      nextRunAt,
      // The new schedule has made nothing yet (decision 0051): the runs it keeps are written,
      // before the job, so that no view loses them should this die in between.
      // A one-off made ahead (decision 0058) is filed ahead no more: its new firing takes the
      // due index's way.
      ...(scheduleChanged ? { madeFrom: undefined, madeThrough: undefined, madeAheadAt: undefined } : {}),
      // A one-off's made run superseded: its firing is not the job's last any more.
      ...(superseded.some((run) => run.final && run.scheduledFor === job.lastFiringAt)
        ? { lastFiringAt: undefined }
        : {}),
      updatedAt: now,
      version: job.version + 1,
      audit: [
        ...job.audit,
        { action: "updated" as const, by: caller.principal, at: now, fields: changed },
      ].slice(-MAX_AUDIT_ENTRIES),
    };
    // New labels are filed before the write, removed ones unfiled after: the job is the truth.
    const removedLabels = Object.keys(job.labels ?? {}).filter((key) => updated.labels?.[key] === undefined);
    if (changed.includes("labels")) await deps.jobs.fileLabels(updated, []);
    await Promise.all(kept.map((run) => deps.runs.createRun(run)));
    if (!(await deps.jobs.replaceJob(updated, job.updatedAt))) continue; // changed under us: read again
    if (removedLabels.length > 0) await deps.jobs.fileLabels(updated, removedLabels);
    await cancelRunsAhead(deps, superseded, SUPERSEDED_REASON, now);
    // After the write: written before it, a change that then died would leave the job on its
    // old schedule with those firings recorded missed, and its resume would not run them.
    await Promise.all(missedInPause.map((run) => deps.runs.createRun(run)));
    deps.log.info("job updated", { jobId, by: caller.principal, fields: changed });
    if (
      updated.status === JobStatus.Active &&
      nextRunAt !== undefined &&
      nextRunAt < now + deps.settings.lookaheadSeconds * 1000
    ) {
      await fireNearTerm(deps, { ...updated, nextRunAt });
    }
    return result(deps, updated, changed, job.schedule, now);
  }
  throw new ConflictError(`job ${jobId} kept changing; try again`, "jobId");
}

/** The definition with the patch merged in: null clears, a schedule kind replaces the others. */
function merge(definition: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const merged = { ...definition };
  for (const kind of SCHEDULE_KINDS) {
    if (patch[kind] !== undefined) for (const field of KIND_FIELDS[kind]) delete merged[field];
  }
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) delete merged[field];
    else if (field === "labels") merged.labels = mergeLabels(merged.labels, value);
    else if (value !== undefined) merged[field] = value;
  }
  return merged;
}

/** Labels merge key by key: a label set to null is removed, the others are kept. */
function mergeLabels(current: unknown, patch: unknown): Record<string, string> {
  const merged: Record<string, unknown> = { ...(current as Record<string, string> | undefined) };
  for (const [key, value] of Object.entries(patch as Record<string, string | null>)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged as Record<string, string>;
}

/**
 * Where a job whose schedule changed goes on: the new schedule's first firing after now and
 * after the latest run that exists. Refused while the old schedule has a firing due that the
 * sweep has not handled (it is behind: a moment later it has), and for a one-off whose run
 * exists. A paused job's old firings that fell in the pause are returned, to be recorded
 * missed once the job is written (a crash in between leaves them unrecorded, never the job on
 * its old schedule with them recorded missed: its resume would not run them).
 */
async function nextRunOfNewSchedule(
  deps: SchedulerDeps,
  job: Job,
  schedule: Schedule,
  now: number,
): Promise<{
  readonly next: number | undefined;
  readonly superseded: readonly Run[];
  /** Runs made ahead that the new schedule fires too: they stay, written (decision 0051). */
  readonly kept: readonly Run[];
  readonly missedInPause: readonly Run[];
}> {
  const overdue = job.nextRunAt !== undefined && job.nextRunAt <= now;
  if (job.status === JobStatus.Active && overdue) {
    throw new ConflictError(
      `job ${job.jobId} has a run due now that is being created; try again in a few seconds`,
      "jobId",
    );
  }
  const madeRun = job.schedule.kind === "once" ? await movableOneOffRun(deps, job, now) : undefined;
  await refuseWhileRunIsCreated(deps, job, "any");
  // A recurring job's runs made ahead in its block (decision 0044) that the new schedule does
  // not fire are superseded: cancelled once the job is written. Those it fires are kept, and
  // the new schedule goes on after them.
  const { recent, ahead } = await runsAhead(deps, job, now);
  if (schedule.kind === "once") {
    // A one-off's run is its last: none made ahead can stand for it (its `final` would be
    // wrong), and its instant must be free, or its run would be found made already.
    const at = firstRunAt(schedule, now);
    if (recent.some((run) => run.scheduledFor === at))
      throw new ConflictError(
        `runAt: job ${job.jobId} has a run at ${formatInstant(at ?? now)}; pick another instant`,
        "runAt",
      );
  }
  const fires = (at: number) => schedule.kind !== "once" && nextFiring(schedule, at - 1)?.at === at;
  // A one-off's run made ahead (decision 0048) is superseded whatever the new schedule fires:
  // it is marked its job's last, which the job no longer is there.
  const superseded = ahead.filter((run) => !fires(run.scheduledFor) || run.runId === madeRun?.runId);
  const kept = ahead.filter((run) => !superseded.includes(run));
  const after = Math.max(
    now - 1,
    ...recent.filter((run) => !superseded.includes(run)).map((run) => run.scheduledFor),
  );
  let next: number | undefined;
  if (schedule.kind === "once") {
    if (schedule.runAt < now - MAX_PAST_RUN_AT_MS)
      throw new ValidationError("runAt: more than 5 minutes in the past", "runAt");
    next = firstRunAt(schedule, now);
  } else {
    next = nextFiring(schedule, after)?.at;
  }
  if (next === undefined) {
    const field = schedule.kind === "cron" ? "cron" : "endAt";
    throw new ValidationError(`${field}: the new schedule has no run after now`, field);
  }
  if (job.status === JobStatus.Paused && overdue && job.nextRunAt !== undefined) {
    const plan = planRuns(
      job.schedule,
      { policy: MissedRunPolicy.Skip, graceMs: 0 },
      job.nextRunAt - 1,
      now,
      now + 1,
    );
    const reason = "the job was paused, and its schedule changed before it was resumed";
    return {
      next,
      superseded,
      kept,
      missedInPause: plan.missed.map((firing) => missedRun(job, { ...firing, reason }, now)),
    };
  }
  return { next, superseded, kept, missedInPause: [] };
}

/**
 * A one-off's run, when it is made (the sweep's, or the create's within 15 minutes: decision
 * 0048), can move with its schedule only while it is pending, never handed out, and not due
 * within MOVABLE_BEFORE_MS (a lease may take it from its lead, up to 25 s before its second);
 * then it is superseded. Otherwise (started, finished, about to be handed out) a new schedule
 * is refused. Undefined: the one-off's run is not made yet.
 */
async function movableOneOffRun(deps: SchedulerDeps, job: Job, now: number): Promise<Run | undefined> {
  if (job.nextRunAt !== undefined) return undefined;
  const firing = job.lastFiringAt;
  // Its run as written, or, made and not written (decision 0051), as its message carries it.
  const made =
    firing === undefined
      ? undefined
      : ((await deps.runs.getRun(job.jobId, firing)) ?? madeRunsAfter(job, firing - 1)[0]);
  const movable =
    made !== undefined &&
    made.origin === undefined &&
    made.status === RunStatus.Pending &&
    made.attempt === 0 &&
    made.scheduledFor > now + MOVABLE_BEFORE_MS;
  if (!movable) {
    throw new ConflictError(
      `job ${job.jobId}: its one run is already started, or about to be; cancel it and create a new job to run at another time`,
      "jobId",
    );
  }
  return made;
}

/** How long before its second a one-off's made run can still be moved by a new schedule. */
export const MOVABLE_BEFORE_MS = 60_000;

export { SUPERSEDED_REASON } from "./runs-ahead";

async function result(
  deps: SchedulerDeps,
  job: Job,
  changed: string[],
  previous: Schedule,
  now: number,
): Promise<UpdateResult> {
  const zoneOf = (schedule: Schedule) => (schedule.kind === "cron" ? schedule.timeZone : DEFAULT_TIME_ZONE);
  return {
    job: await viewOf(deps, job),
    changed,
    nextRunsBefore: previewRuns(previous, zoneOf(previous), now, PREVIEW_COUNT),
    nextRunsAfter: previewRuns(
      job.schedule,
      zoneOf(job.schedule),
      nextRunShown(job, now) ?? now,
      PREVIEW_COUNT,
    ),
  };
}

/** The job's ETag: its version, quoted. */
export function etagOf(job: Pick<Job, "version">): string {
  return `"${job.version}"`;
}

/** If-Match: a list of entity tags or `*`, compared strongly (a weak W/ tag never matches). */
export function etagMatches(ifMatch: string, version: number): boolean {
  return ifMatch
    .split(",")
    .map((tag) => tag.trim())
    .some((tag) => tag === "*" || tag === `"${version}"`);
}
