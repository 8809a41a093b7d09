import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { madeRunsAfter } from "../made-runs";
import { listJobsQuery, pageQuery } from "../schemas";
import { parseWith } from "../validation";
import { jobSummaryView, runView } from "../views";
import { callersJob } from "./get-job";

/** GET /api/v1/jobs: the caller's jobs, newest first, a page at a time. */
export async function listJobs(deps: Pick<SchedulerDeps, "jobs" | "clock">, caller: Caller, query: unknown) {
  const q = parseWith(listJobsQuery, query, "query");
  const page = await deps.jobs.listJobs(
    caller.tenant,
    { status: q.status, type: q.type, labels: q.label },
    q.limit,
    q.cursor,
  );
  return {
    jobs: page.items.map((job) => jobSummaryView(job, deps.clock.now())),
    ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
  };
}

/** GET /api/v1/jobs/{jobId}/runs: every run of one of the caller's jobs, newest first. */
export async function listRuns(
  deps: Pick<SchedulerDeps, "jobs" | "runs">,
  caller: Caller,
  jobId: string,
  query: unknown,
) {
  const q = parseWith(pageQuery, query, "query");
  const job = await callersJob(deps, caller, jobId);
  // The first page begins with the runs made and not written yet (decision 0051), within its limit.
  const made = q.cursor === undefined ? madeRunsAfter(job, job.createdAt - 1, q.limit - 1).reverse() : [];
  const page = await deps.runs.listRuns(jobId, q.limit - made.length, q.cursor);
  const newest = page.items[0]?.scheduledFor ?? job.createdAt - 1;
  const unwritten = made.filter((run) => run.scheduledFor > newest);
  return {
    runs: [...unwritten, ...page.items].map(runView),
    ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
  };
}
