import { SchedulerClient } from "@aws-sdk/client-scheduler";
import type { Command } from "commander";
import type { CliContext } from "../context";
import { type ImportRow, importSchedules } from "../import/import-schedules";
import { table } from "../tables";
import { importJobs } from "./import-jobs";

/** `jobsched import eventbridge-scheduler`: jobs from the account's EventBridge schedules. */
export function importCommand(
  program: Command,
  cli: CliContext,
  schedulerFor: (region: string, cli: CliContext) => SchedulerClient = (region, c) =>
    new SchedulerClient({ region, credentials: c.credentials() }),
): void {
  const imports = program
    .command("import")
    .description("bring jobs over from a jobsched export, or schedules from another scheduler");
  imports
    .command("jobs <file>")
    .description(
      "create the active and paused jobs of a jobsched export here (- reads standard input); a second run creates nothing",
    )
    .action(async (file: string) => importJobs(cli, file));
  imports
    .command("eventbridge-scheduler")
    .description(
      "create a job for each EventBridge Scheduler schedule (read only: the schedules are not changed); a second run creates nothing",
    )
    .option("--group <name>", "only this schedule group")
    .option("--dry-run", "convert and list, create nothing")
    .action(async (o: { group?: string; dryRun?: boolean }) => {
      const progress = cli.progress({ unit: "schedules" });
      const rows = await importSchedules(schedulerFor(cli.globals().region, cli), cli.client(), {
        group: o.group,
        dryRun: o.dryRun === true,
        now: Date.now,
        onListed: (count) => progress.setTotal(count),
        onRow: (done) => {
          const last = done.at(-1);
          progress.update(
            done.length,
            last === undefined ? "" : `${last.group}/${last.name}: ${last.result}`,
          );
        },
      })
        .then((rows) => {
          progress.update(rows.length, "done");
          return rows;
        })
        .finally(() => progress.stop());
      cli.print(rows, render);
    });
}

function render(rows: readonly ImportRow[]): string {
  const count = (result: ImportRow["result"]) => rows.filter((r) => r.result === result).length;
  const lines = rows.map((r) => [
    r.group,
    r.name,
    r.result + (r.paused ? " (paused)" : ""),
    r.jobId ?? "",
    [r.reason, ...(r.notes ?? [])].filter(Boolean).join("; "),
  ]);
  const summary = [
    `${count("created")} created`,
    `${count("exists")} already imported`,
    ...(count("would-create") > 0 ? [`${count("would-create")} to create (dry run)`] : []),
    `${count("not-converted")} not converted`,
    ...(count("failed") > 0 ? [`${count("failed")} refused by the API`] : []),
  ].join(", ");
  return `${table(["GROUP", "SCHEDULE", "RESULT", "JOB", "REASON / NOTES"], lines)}\n${summary}`;
}
