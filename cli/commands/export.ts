import type { ListJobsInput } from "@jobsched/client";
import type { JobResponse } from "@jobsched/contract";
import type { Command } from "commander";
import { type CliContext, CliError } from "../context";
import { exportedJob } from "../export/exported-job";

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
      const progress = cli.progress({ unit: "jobs exported" });
      do {
        let page: { jobs: JobResponse[]; cursor?: string };
        try {
          page = await cli.client().exportPage({
            ...(o.status === undefined ? {} : { status: o.status as ListJobsInput["status"] }),
            ...(cursor === undefined ? {} : { cursor }),
          });
        } catch (error) {
          progress.stop();
          const resume = `${status}${cursor === undefined ? "" : ` --cursor ${cursor}`}`;
          throw new CliError(
            `${error instanceof Error ? error.message : String(error)} (${written} jobs written; go on with: jobsched export${resume} >> the same file)`,
          );
        }
        for (const job of page.jobs) cli.out.log(JSON.stringify(exportedJob(job)));
        written += page.jobs.length;
        cursor = page.cursor;
        if (cursor === undefined) {
          progress.stop();
          cli.out.error(`exported ${written} jobs`);
        } else if (progress.drawing) {
          // On a terminal the bar carries where to go on from (a line of its own would break it).
          progress.update(written, `(to go on from here: --cursor ${cursor})`);
        } else {
          cli.out.error(
            `exported ${written} jobs so far; to go on from here: jobsched export${status} --cursor ${cursor}`,
          );
        }
      } while (cursor !== undefined);
    });
}
