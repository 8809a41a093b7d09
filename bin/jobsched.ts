/**
 * The jobsched command line.
 *
 *   jobsched preview ...              offline: the next runs of a schedule
 *   jobsched jobs create|get|list|runs|pause|resume|cancel ...
 *   jobsched dlq list|replay ...      dead letters: list, replay one or all
 *   jobsched worker ...               a worker that runs a command for each run it leases
 *
 * `jobs` commands call the API signed with SigV4, with credentials from the standard AWS chain
 * (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE / --profile, SSO, instance roles...).
 * --endpoint (or JOBSCHED_ENDPOINT) picks the local runtime or a deployed API.
 */

import { spawn } from "node:child_process";
import { fromNodeProviderChain } from "@aws-sdk/credential-providers";
import { createSignedFetch, createWorker, type LeasedRun, PermanentError } from "@jobsched/worker";
import { Command, CommanderError, Option } from "commander";
import { ValidationError } from "../lambdas/core/errors";
import { type Preview, previewSchedule } from "../lambdas/core/schedule/preview";
import { table } from "./tables";

interface GlobalOptions {
  endpoint: string;
  region: string;
  profile?: string;
  json?: boolean;
}

type Out = { log: (text: string) => void; error: (text: string) => void };

class CliError extends Error {}

function previewTable(preview: Preview): string {
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
  return rows.length === 0
    ? "(no runs at or after --from)"
    : table(["UTC", `local (${preview.timeZone})`, ""], rows);
}

type Json = Record<string, unknown>;
const str = (v: unknown) => (v === undefined || v === null ? "" : String(v));

function jobTable(job: Json): string {
  const schedule = job.cron
    ? `cron "${str(job.cron)}" ${str(job.timeZone)}`
    : job.interval
      ? `every ${str((job.interval as Json).every)}`
      : `at ${str(job.runAt)}`;
  const lines = [
    `job        ${str(job.jobId)}`,
    `type       ${str(job.type)}`,
    `status     ${str(job.status)}`,
    `schedule   ${schedule}`,
    `next run   ${str(job.nextRunAt) || "-"}`,
  ];
  const runs = (job.runs as Json[] | undefined) ?? [];
  if (runs.length > 0) lines.push("", runsTable(runs));
  return lines.join("\n");
}

function runsTable(runs: Json[]): string {
  return table(
    ["SCHEDULED FOR", "STATUS", "ATTEMPT", "FENCE", "FINISHED", "ERROR"],
    runs.map((r) => [
      str(r.scheduledFor),
      str(r.status),
      str(r.attempt),
      str(r.fence),
      str(r.finishedAt),
      str(r.error),
    ]),
  );
}

export function buildProgram(out: Out, exitCodes: { code: number }) {
  const program = new Command("jobsched")
    .description("Schedule and inspect jobsched jobs; preview schedules offline")
    .addOption(
      new Option("--endpoint <url>", "API base URL")
        .env("JOBSCHED_ENDPOINT")
        .default("http://127.0.0.1:8787"),
    )
    .addOption(
      new Option("--region <region>", "AWS region to sign for").env("AWS_REGION").default("us-east-1"),
    )
    .option("--profile <name>", "AWS profile for credentials (default: the standard chain)")
    .option("--json", "print the API's JSON instead of tables")
    .configureOutput({ writeOut: (s) => out.log(s.trimEnd()), writeErr: (s) => out.error(s.trimEnd()) })
    .exitOverride();

  const globals = () => program.opts<GlobalOptions>();
  const call = async (
    method: string,
    path: string,
    init: { body?: unknown; query?: Record<string, string | undefined> } = {},
  ) => {
    const g = globals();
    const credentials = fromNodeProviderChain(g.profile ? { profile: g.profile } : {});
    const response = await createSignedFetch({ endpoint: g.endpoint, region: g.region, credentials })(
      method,
      path,
      init,
    );
    if (response.status >= 400) {
      const body = response.body as { error?: { message?: string }; message?: string } | undefined;
      throw new CliError(
        `HTTP ${response.status}: ${body?.error?.message ?? body?.message ?? JSON.stringify(body)}`,
      );
    }
    return response.body as Json;
  };
  const print = (body: Json, human: (b: Json) => string) =>
    out.log(globals().json ? JSON.stringify(body, null, 2) : human(body));

  program
    .command("preview")
    .description("show the next runs of a schedule, in UTC and local time (offline)")
    .option("--cron <expr>", "five-field cron expression or macro (@hourly, @daily, ...)")
    .option("--tz, --time-zone <zone>", "IANA time zone the cron is read in (default UTC)")
    .option("--interval <every>", "fixed interval in UTC: 15m, 2h, 1d or ISO 8601 (PT15M)")
    .option("--run-at <instant>", "a one-off ISO 8601 instant")
    .option("--start-at <instant>", "first instant a recurring schedule may run")
    .option("--end-at <instant>", "last instant a recurring schedule may run")
    .option("--from <instant>", "list runs at or after this instant (default: now)")
    .option("--count <n>", "how many runs, 1-100 (default 10)")
    .action((o: Record<string, string | undefined>) => {
      const query = Object.fromEntries(
        Object.entries({
          cron: o.cron,
          timeZone: o.timeZone,
          interval: o.interval,
          runAt: o.runAt,
          startAt: o.startAt,
          endAt: o.endAt,
          from: o.from,
          count: o.count,
        }).filter(([, v]) => v !== undefined),
      );
      const preview = previewSchedule(query, Date.now());
      out.log(globals().json ? JSON.stringify(preview, null, 2) : previewTable(preview));
    });

  const jobs = program.command("jobs").description("create and control jobs (signed API calls)");
  jobs
    .command("create")
    .description("schedule a job: give one of --run-at, --cron, --interval")
    .requiredOption("--type <type>", "job type, e.g. send-invoice")
    .option("--run-at <instant>", "run once at this ISO 8601 instant")
    .option("--cron <expr>", "cron expression")
    .option("--tz, --time-zone <zone>", "IANA time zone of the cron expression")
    .option("--interval <every>", "fixed interval: 15m, 2h, PT15M")
    .option("--start-at <instant>", "first instant a recurring job may run")
    .option("--end-at <instant>", "last instant a recurring job may run")
    .option("--payload <json>", "JSON payload handed to the worker")
    .option("--idempotency-key <key>", "makes retrying the create safe")
    .option("--missed-runs <policy>", "catch-up | run-once | skip")
    .option("--max-lateness <duration>", "seconds or ISO 8601 duration")
    .option("--max-attempts <n>", "1-100")
    .option("--lease-seconds <n>", "5-42600 (11 h 50 min)")
    .action(async (o: Record<string, string | undefined>) => {
      let payload: unknown;
      if (o.payload !== undefined) {
        try {
          payload = JSON.parse(o.payload);
        } catch {
          throw new CliError("--payload is not valid JSON");
        }
      }
      const number = (v: string | undefined) => (v === undefined ? undefined : Number(v));
      const body = Object.fromEntries(
        Object.entries({
          type: o.type,
          runAt: o.runAt,
          cron: o.cron,
          timeZone: o.timeZone,
          interval: o.interval === undefined ? undefined : { every: o.interval },
          startAt: o.startAt,
          endAt: o.endAt,
          payload,
          idempotencyKey: o.idempotencyKey,
          missedRuns: o.missedRuns,
          maxLateness:
            o.maxLateness === undefined
              ? undefined
              : /^\d+$/.test(o.maxLateness)
                ? Number(o.maxLateness)
                : o.maxLateness,
          maxAttempts: number(o.maxAttempts),
          leaseSeconds: number(o.leaseSeconds),
        }).filter(([, v]) => v !== undefined),
      );
      print(
        await call("POST", "/api/v1/jobs", { body }),
        (b) => `${str(b.jobId)}  next run ${str(b.nextRunAt) || "-"}`,
      );
    });
  jobs
    .command("get <jobId>")
    .description("a job with its most recent runs")
    .action(async (jobId: string) =>
      print(await call("GET", `/api/v1/jobs/${encodeURIComponent(jobId)}`), jobTable),
    );
  jobs
    .command("list")
    .description("your jobs, newest first")
    .option("--status <status>", "active | paused | cancelled | completed")
    .option("--type <type>", "only this job type")
    .option("--limit <n>", "page size, 1-100")
    .option("--cursor <cursor>", "the next page, from a previous answer")
    .action(async (o: Record<string, string | undefined>) =>
      print(await call("GET", "/api/v1/jobs", { query: o }), (b) => {
        const rows = ((b.jobs as Json[]) ?? []).map((j) => [
          str(j.jobId),
          str(j.type),
          str(j.status),
          str(j.nextRunAt) || "-",
          j.cron
            ? `cron ${str(j.cron)}`
            : j.interval
              ? `every ${str((j.interval as Json).every)}`
              : `at ${str(j.runAt)}`,
        ]);
        const more = b.cursor ? `\nmore: --cursor ${str(b.cursor)}` : "";
        return `${table(["JOB", "TYPE", "STATUS", "NEXT RUN", "SCHEDULE"], rows)}${more}`;
      }),
    );
  jobs
    .command("runs <jobId>")
    .description("a job's run history, newest first")
    .option("--limit <n>", "page size, 1-100")
    .option("--cursor <cursor>", "the next page")
    .action(async (jobId: string, o: Record<string, string | undefined>) =>
      print(await call("GET", `/api/v1/jobs/${encodeURIComponent(jobId)}/runs`, { query: o }), (b) => {
        const more = b.cursor ? `\nmore: --cursor ${str(b.cursor)}` : "";
        return `${runsTable((b.runs as Json[]) ?? [])}${more}`;
      }),
    );
  for (const [name, method, suffix] of [
    ["pause", "POST", "/pause"],
    ["resume", "POST", "/resume"],
    ["cancel", "DELETE", ""],
  ] as const) {
    jobs
      .command(`${name} <jobId>`)
      .description(`${name} a job`)
      .action(async (jobId: string) =>
        print(await call(method, `/api/v1/jobs/${encodeURIComponent(jobId)}${suffix}`), jobTable),
      );
  }

  const dlq = program.command("dlq").description("dead-lettered runs: list and replay (signed API calls)");
  dlq
    .command("list")
    .description("your dead-lettered runs, most recent first, with their last error")
    .option("--limit <n>", "page size, 1-100")
    .option("--cursor <cursor>", "from a previous page")
    .action(async (o: { limit?: string; cursor?: string }) =>
      print(
        await call("GET", "/api/v1/dead-letters", { query: { limit: o.limit, cursor: o.cursor } }),
        (b) => {
          const rows = ((b.deadLetters as Json[]) ?? []).map((r) => [
            str(r.runId),
            str(r.type),
            str(r.scheduledFor),
            str(r.attempt),
            str(r.replays),
            str(r.error),
          ]);
          const more = b.cursor ? `\nmore: --cursor ${str(b.cursor)}` : "";
          return `${table(["RUN", "TYPE", "SCHEDULED FOR", "ATTEMPTS", "REPLAYS", "LAST ERROR"], rows)}${more}`;
        },
      ),
    );
  dlq
    .command("replay [runId]")
    .description("replay one dead letter (same run key, attempts reset), or all with --all")
    .option("--all", "replay every one of your dead letters")
    .action(async (runId: string | undefined, o: { all?: boolean }) => {
      if (!runId && !o.all) throw new CliError("give a run id, or --all");
      if (runId && o.all) throw new CliError("give a run id or --all, not both");
      const path = runId
        ? `/api/v1/dead-letters/${encodeURIComponent(runId)}/replay`
        : "/api/v1/dead-letters/replay";
      print(await call("POST", path), (b) =>
        runId
          ? `replayed ${str(b.runId)} (replay ${str(b.replays)})`
          : `replayed ${str(b.replayed)} run(s)` +
            (Number(b.skippedPaused) > 0
              ? `; ${str(b.skippedPaused)} of paused jobs left (resume them first)`
              : "") +
            (b.complete === false ? "; more remain: run it again" : ""),
      );
    });

  program
    .command("worker")
    .description("run a worker: lease runs of some types and execute a command for each")
    .requiredOption("--types <types>", "comma-separated job types to lease")
    .option(
      "--exec <command>",
      "shell command per run: payload JSON on stdin, JOBSCHED_RUN_KEY etc. in env; exit 0 = success, 2 = permanent failure, other = retryable failure (default: print the run)",
    )
    .option("--concurrency <n>", "runs at once", "10")
    .action(async (o: { types: string; exec?: string; concurrency: string }) => {
      const g = globals();
      const concurrency = Number(o.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1)
        throw new CliError("--concurrency: must be a positive integer");
      const worker = createWorker({
        endpoint: g.endpoint,
        region: g.region,
        credentials: fromNodeProviderChain(g.profile ? { profile: g.profile } : {}),
        types: o.types
          .split(",")
          .map((t) => t.trim())
          .filter(Boolean),
        concurrency,
        log: (line) => out.error(line),
        handler: o.exec ? execHandler(o.exec) : async (run) => out.log(JSON.stringify(run)),
      });
      out.error(`[worker] leasing ${o.types} from ${g.endpoint}; Ctrl-C drains and stops`);
      await worker.done;
    });

  program.hook("postAction", () => {
    exitCodes.code = 0;
  });
  return program;
}

/** A worker handler that runs a shell command per run; its exit code is the outcome. */
function execHandler(command: string) {
  return (run: LeasedRun) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(command, {
        shell: true,
        stdio: ["pipe", "inherit", "inherit"],
        env: {
          ...process.env,
          JOBSCHED_RUN_ID: run.runId,
          JOBSCHED_RUN_KEY: run.runKey,
          JOBSCHED_JOB_ID: run.jobId,
          JOBSCHED_TYPE: run.type,
          JOBSCHED_ATTEMPT: String(run.attempt),
          JOBSCHED_FENCE: String(run.fence),
          JOBSCHED_SCHEDULED_FOR: run.scheduledFor,
        },
      });
      child.stdin.end(JSON.stringify(run.payload ?? null));
      child.on("error", reject);
      child.on("exit", (code) => {
        if (code === 0) resolve();
        else if (code === 2) reject(new PermanentError(`${command} exited with 2`));
        else reject(new Error(`${command} exited with ${code}`));
      });
    });
}

/** Runs the CLI; resolves to the process exit code (0 ok, 1 API or input error, 2 usage). */
export async function main(
  argv: string[],
  out: Out = { log: console.log, error: console.error },
): Promise<number> {
  const exit = { code: 0 };
  try {
    await buildProgram(out, exit).parseAsync(argv, { from: "user" });
    return exit.code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof ValidationError || error instanceof CliError) {
      out.error(`jobsched: ${error.message}`);
      return error instanceof ValidationError ? 2 : 1;
    }
    out.error(`jobsched: ${(error as Error).message}`);
    return 1;
  }
}

// Run directly (`tsx bin/jobsched.ts ...`); bin/jobsched.mjs imports main() and calls it itself.
if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2));
}
