import type { JobResponse, JobsPageResponse } from "@jobsched/contract";
import type { Command } from "commander";
import { type CliContext, CliError } from "../context";
import { exportedJob } from "../export/exported-job";

/** Jobs read side by side while a page is written. */
const READS_AT_ONCE = 8;

/**
 * `jobsched export > jobs.jsonl`: every job of the caller, one JSON line each (exported-job.ts),
 * page by page (100 jobs, newest first). A page's lines are written only once all of its jobs
 * were read, and after each page standard error says how to go on from the next one, so an export
 * that failed or was stopped resumes with `--cursor` and `>>` without a gap or a repeat.
 */
export function exportCommand(program: Command, cli: CliContext): void {
  program
    .command("export")
    .description(
      "write every job of yours (definition, status, labels, next run) as JSON lines to standard output, for jobsched import jobs",
    )
    .option("--status <status>", "only jobs in this status: active | paused | cancelled | completed")
    .option("--cursor <cursor>", "go on from this page (standard error prints it after each page)")
    .action(async (o: { status?: string; cursor?: string }) => {
      let cursor = o.cursor;
      let written = 0;
      // A resume must keep the filter: the cursor is a place in the filtered listing.
      const status = o.status === undefined ? "" : ` --status ${o.status}`;
      do {
        let page: JobsPageResponse;
        let jobs: JobResponse[];
        try {
          page = await cli.call<JobsPageResponse>("GET", "/api/v1/jobs", {
            query: { limit: "100", status: o.status, cursor },
          });
          jobs = await readJobs(
            cli,
            page.jobs.map((j) => j.jobId),
          );
        } catch (error) {
          const resume = `${status}${cursor === undefined ? "" : ` --cursor ${cursor}`}`;
          throw new CliError(
            `${error instanceof Error ? error.message : String(error)} (${written} jobs written; go on with: jobsched export${resume} >> the same file)`,
          );
        }
        for (const job of jobs) cli.out.log(JSON.stringify(exportedJob(job)));
        written += jobs.length;
        cursor = page.cursor;
        cli.out.error(
          cursor === undefined
            ? `exported ${written} jobs`
            : `exported ${written} jobs so far; to go on from here: jobsched export${status} --cursor ${cursor}`,
        );
      } while (cursor !== undefined);
    });
}

/** The jobs in full, in order; a job deleted since the listing is left out. */
async function readJobs(cli: CliContext, ids: readonly string[]): Promise<JobResponse[]> {
  const jobs: Array<JobResponse | undefined> = new Array(ids.length);
  let next = 0;
  const fetch = cli.signedFetch();
  const reader = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      const answer = await fetch("GET", `/api/v1/jobs/${encodeURIComponent(ids[i] ?? "")}`);
      if (answer.status === 404) continue;
      if (answer.status !== 200)
        throw new CliError(`GET job ${ids[i]}: ${answer.status} ${JSON.stringify(answer.body)}`);
      jobs[i] = answer.body as JobResponse;
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, ids.length) }, reader));
  return jobs.filter((job): job is JobResponse => job !== undefined);
}
