/**
 * The jobsched command line. `jobsched preview` works offline: it runs the same schedule code
 * as GET /api/v1/schedules/preview and prints the same JSON with --json.
 */
import { parseArgs } from "node:util";
import { ValidationError } from "../lambdas/core/errors";
import { type Preview, previewSchedule } from "../lambdas/core/schedule/preview";

const HELP = `Usage: jobsched <command> [options]

Commands:
  preview    Show the next run instants of a schedule, in UTC and local time (offline)

Options for preview (give one of --cron, --interval, --run-at):
  --cron EXPR          five-field cron expression or macro (@hourly, @daily, ...)
  --tz ZONE            IANA time zone the cron is read in (default UTC); alias --time-zone
  --interval EVERY     fixed interval computed in UTC: 15m, 2h, 1d or ISO 8601 (PT15M)
  --run-at INSTANT     a one-off ISO 8601 instant
  --start-at INSTANT   first instant a recurring schedule may run
  --end-at INSTANT     last instant a recurring schedule may run
  --from INSTANT       list runs at or after this instant (default: now)
  --count N            how many runs, 1-100 (default 10)
  --json               print JSON, exactly as the HTTP API answers
  -h, --help           this text

Example:
  jobsched preview --cron "30 1 * * *" --tz Europe/London --from 2026-03-28T00:00:00Z --count 3
`;

function printTable(preview: Preview): void {
  const rows = preview.runs.map((run) => {
    const note =
      run.dst === "moved"
        ? `moved by DST (scheduled ${run.scheduledLocal?.join(", ")})`
        : run.dst === "merged"
          ? `DST merged ${run.scheduledLocal?.join(", ")} into one run`
          : run.dst === "repeated"
            ? "local time happens twice; runs at the first"
            : "";
    return [run.at, run.local, note];
  });
  const header = ["UTC", `local (${preview.timeZone})`, ""];
  const widths = [0, 1].map((i) => Math.max(...[header, ...rows].map((r) => (r[i] ?? "").length)));
  for (const row of [header, ...rows]) {
    console.log(
      row
        .map((cell, i) => (i < 2 ? (cell ?? "").padEnd(widths[i] ?? 0) : cell))
        .join("   ")
        .trimEnd(),
    );
  }
  if (rows.length === 0) console.log("(no runs at or after --from)");
}

export function main(argv: string[]): number {
  const [command, ...rest] = argv;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    console.log(HELP);
    return command === undefined ? 2 : 0;
  }
  if (command !== "preview") {
    console.error(`jobsched: unknown command "${command}"\n\n${HELP}`);
    return 2;
  }
  let values: ReturnType<typeof parse>;
  try {
    values = parse(rest);
  } catch (error) {
    console.error(`jobsched preview: ${(error as Error).message}`);
    return 2;
  }
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const query = Object.fromEntries(
    Object.entries({
      cron: values.cron,
      timeZone: values.tz ?? values["time-zone"],
      interval: values.interval,
      runAt: values["run-at"],
      startAt: values["start-at"],
      endAt: values["end-at"],
      from: values.from,
      count: values.count,
    }).filter(([, v]) => v !== undefined),
  );
  try {
    const preview = previewSchedule(query, Date.now());
    if (values.json) console.log(JSON.stringify(preview, null, 2));
    else printTable(preview);
    return 0;
  } catch (error) {
    if (error instanceof ValidationError) {
      console.error(`jobsched preview: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    options: {
      cron: { type: "string" },
      tz: { type: "string" },
      "time-zone": { type: "string" },
      interval: { type: "string" },
      "run-at": { type: "string" },
      "start-at": { type: "string" },
      "end-at": { type: "string" },
      from: { type: "string" },
      count: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }).values;
}

// Run directly (`tsx bin/jobsched.ts ...`); bin/jobsched.mjs imports main() and calls it itself.
if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = main(process.argv.slice(2));
}
