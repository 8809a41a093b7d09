import type { Command } from "commander";
import { previewSchedule } from "../../lambdas/core/schedule/preview";
import type { CliContext } from "../context";
import { previewTable } from "../render";

/** `jobsched preview`: the next runs of a schedule, computed offline with the server's own code. */
export function previewCommand(program: Command, cli: CliContext): void {
  program
    .command("preview")
    .description("show the next runs of a schedule, in UTC and local time (offline)")
    .option("--cron <expr>", "five-field cron expression or macro (@hourly, @daily, ...)")
    .option("--tz, --time-zone <zone>", "IANA time zone the cron is read in (default UTC)")
    .option("--dst-policy <policy>", "first-occurrence (default) | every-occurrence | skip-gap")
    .option("--interval <every>", "fixed interval in UTC: 15m, 2h, 1d or ISO 8601 (PT15M)")
    .option("--run-at <instant>", "a one-off ISO 8601 instant")
    .option("--start-at <instant>", "first instant a recurring schedule may run")
    .option("--end-at <instant>", "last instant a recurring schedule may run")
    .option("--jitter <window>", "spread runs over this window after each firing (ISO 8601, e.g. PT5M)")
    .option(
      "--job-id <id>",
      "the job whose jitter offsets to show (offsets are drawn per job; for an imported job, its importedFrom)",
    )
    .option("--from <instant>", "list runs at or after this instant (default: now)")
    .option("--count <n>", "how many runs, 1-100 (default 10)")
    .action((o: Record<string, string | undefined>) => {
      const query = Object.fromEntries(
        Object.entries({
          cron: o.cron,
          timeZone: o.timeZone,
          dstPolicy: o.dstPolicy,
          interval: o.interval,
          runAt: o.runAt,
          startAt: o.startAt,
          endAt: o.endAt,
          jitter: o.jitter,
          jobId: o.jobId,
          from: o.from,
          count: o.count,
        }).filter(([, v]) => v !== undefined),
      );
      cli.print(previewSchedule(query, Date.now()), previewTable);
    });
}
