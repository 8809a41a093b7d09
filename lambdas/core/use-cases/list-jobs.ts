import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
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
  const _job = await callersJob(deps, caller, jobId);
  const page = await deps.runs.listRuns(jobId, q.limit, q.cursor);
  return { runs: page.items.map(runView), ...(page.cursor === undefined ? {} : { cursor: page.cursor }) };
}
