import { listJobsQuery, pageQuery } from "@jobsched/contract";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { ValidationError } from "../errors";
import { newestFirst, runsKeptSince, unwrittenMadeRuns } from "../made-runs";
import { shownJobs } from "../one-off-end";
import { parseWith } from "../validation";
import { jobSummaryView, runView } from "../views";
import { callersJob } from "./get-job";
import { aheadSentThroughOf } from "./sweep-ahead";

/** GET /api/v1/jobs: the caller's jobs, newest first, a page at a time. */
export async function listJobs(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "clock" | "settings">,
  caller: Caller,
  query: unknown,
) {
  const q = parseWith(listJobsQuery, query, "query");
  const now = deps.clock.now();
  const keptSince = runsKeptSince(deps.settings, now);
  const page = await deps.jobs.listJobs(
    caller.tenant,
    // A one-off its run ended is listed, and filtered, as completed (decision 0057); a listing of
    // paused or cancelled jobs reads no run, as no such job is shown otherwise.
    {
      status: q.status,
      type: q.type,
      labels: q.label,
      show: showsEnded(q.status) ? (jobs) => shownJobs(deps.runs, jobs, keptSince, now) : undefined,
    },
    q.limit,
    q.cursor,
  );
  const sentThrough = await aheadSentThroughOf(deps, page.items);
  return {
    jobs: page.items.map((job) => jobSummaryView(job, now, sentThrough(job.jobId))),
    ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
  };
}

/** Whether a listing with this status filter can show a one-off its run ended (decision 0057). */
function showsEnded(status: string | undefined): boolean {
  return status === undefined || status === "active" || status === "completed";
}

/** The runs listing's cursor: the runs scheduled before this instant come next. */
const RUNS_CURSOR = "before.";

/**
 * GET /api/v1/jobs/{jobId}/runs: every run of one of the caller's jobs, newest first, a page at
 * a time: the written ones and, among them, those made and not written yet (decision 0051),
 * which only their job and their messages know. A page's cursor is the instant its last run
 * was scheduled for; the next page lists the runs before it.
 */
export async function listRuns(
  deps: Pick<SchedulerDeps, "jobs" | "runs" | "settings" | "clock">,
  caller: Caller,
  jobId: string,
  query: unknown,
) {
  const q = parseWith(pageQuery, query, "query");
  const job = await callersJob(deps, caller, jobId);
  const before =
    q.cursor === undefined ? Number.POSITIVE_INFINITY : Number(q.cursor.slice(RUNS_CURSOR.length));
  if (q.cursor !== undefined && !/^before\.[0-9]{1,16}$/.test(q.cursor))
    throw new ValidationError("cursor: not a cursor this listing gave; start again without one", "cursor");
  const written = await deps.runs.listRunsBefore(jobId, before, q.limit);
  const full = written.length >= q.limit;
  const oldest = full ? (written.at(-1)?.scheduledFor ?? 0) : Number.NEGATIVE_INFINITY;
  // A backlog's missed record older than the page may stand for some of its firings.
  const older = full ? await deps.runs.latestRunBefore(jobId, oldest) : undefined;
  const now = deps.clock.now();
  const keptSince = runsKeptSince(deps.settings, now);
  const sentThrough = (await aheadSentThroughOf(deps, [job]))(job.jobId);
  const made = unwrittenMadeRuns(
    job,
    older ? [...written, older] : written,
    oldest,
    keptSince,
    sentThrough,
  ).filter((run) => run.scheduledFor < before);
  const runs = newestFirst([...written, ...made]).slice(0, q.limit);
  const more = full || written.length + made.length > q.limit;
  const last = runs.at(-1);
  return {
    runs: runs.map(runView),
    ...(more && last ? { cursor: `${RUNS_CURSOR}${last.scheduledFor}` } : {}),
  };
}
