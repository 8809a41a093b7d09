import type { CreateJobInput, ListJobsInput, UpdateJobInput } from "@jobsched/client";
import type { Command } from "commander";
import { type CliContext, CliError, moreLine } from "../context";
import { jobsTable, jobTable, runsTable } from "../render";
import { createFromFile } from "./create-from-file";

/** `jobsched jobs create|update|get|list|runs|pause|trigger|backfill|resume|cancel`: signed calls to the jobs API. */
export function jobsCommand(program: Command, cli: CliContext): void {
  const jobs = program.command("jobs").description("create and control jobs (signed API calls)");

  definitionOptions(
    jobs
      .command("create")
      .description(
        "schedule a job: give one of --run-at, --cron, --interval, and a --type for workers or a --target-* to push to; or --file for many",
      )
      .option("--type <type>", "job type workers lease, e.g. send-invoice (not with a --target-*)"),
  )
    .option("--idempotency-key <key>", "makes retrying the create safe")
    .option(
      "--file <jobs.jsonl>",
      "create many: one JSON create body per line (- for standard input), sent 100 at a time; with --idempotency-key a line without a key gets one from the key and the line, so sending the file again is safe",
    )
    .action(async (o: Record<string, string | undefined>) => {
      if (o.file !== undefined) {
        const others = Object.keys(o).filter(
          (k) => k !== "file" && k !== "idempotencyKey" && o[k] !== undefined,
        );
        if (others.length > 0)
          throw new CliError(`--file takes its jobs from the file: leave out --${others.join(", --")}`);
        return createFromFile(cli, o.file, o.idempotencyKey);
      }
      if (o.type === undefined && targetOf(o) === undefined) {
        throw new CliError(
          "give --type (runs go to workers) or a --target-https/--target-lambda/--target-sqs",
        );
      }
      const body = {
        ...given({ type: o.type }),
        ...definitionBody(o),
        ...given({ idempotencyKey: o.idempotencyKey }),
      };
      // The CLI sends what was typed; the API checks it and names the field at fault.
      const { created: _, ...answer } = await cli.client().createJob(body as CreateJobInput);
      cli.print(answer, (b) => `${b.jobId}  next run ${b.nextRunAt ?? "-"}`);
    });
  definitionOptions(
    jobs
      .command("update <jobId>")
      .description("change a job in place: the options given change, the rest stay (--clear resets one)"),
  )
    .option(
      "--clear <fields>",
      "comma-separated fields to reset to their default: timeZone, dstPolicy, jitter, startAt, endAt, maxLateness, retry, leaseSeconds, labels",
    )
    .option("--if-match <etag>", 'refuse (412) unless the job is still at this version (its ETag, e.g. "3")')
    .action(async (jobId: string, o: Record<string, string | undefined>) => {
      const cleared = Object.fromEntries(
        (o.clear ?? "")
          .split(",")
          .filter(Boolean)
          .map((f) => [f.trim(), null]),
      );
      const body = { ...cleared, ...definitionBody(o) };
      cli.print(
        await cli
          .client()
          .updateJob(jobId, body as UpdateJobInput, o.ifMatch === undefined ? {} : { ifMatch: o.ifMatch }),
        (b) =>
          [
            b.changed.length === 0 ? "nothing changed" : `changed: ${b.changed.join(", ")}`,
            `version ${b.job.version}`,
            "",
            `next runs before: ${b.nextRunsBefore.map((r) => r.at).join("  ") || "-"}`,
            `next runs after:  ${b.nextRunsAfter.map((r) => r.at).join("  ") || "-"}`,
          ].join("\n"),
      );
    });
  jobs
    .command("get <jobId>")
    .description("a job with its most recent runs")
    .action(async (jobId: string) => cli.print(await cli.client().getJob(jobId), jobTable));
  jobs
    .command("list")
    .description("your jobs, newest first")
    .option("--status <status>", "active | paused | cancelled | completed")
    .option("--type <type>", "only this job type")
    .option("--label <pairs>", "only jobs with these labels: key=value, comma-separated")
    .option("--limit <n>", "page size, 1-100")
    .option("--cursor <cursor>", "the next page, from a previous answer")
    .action(async (o: Record<string, string | undefined>) =>
      cli.print(
        await cli.client().listJobs({
          ...pageOf(o),
          ...(o.status === undefined ? {} : { status: o.status as ListJobsInput["status"] }),
          ...(o.type === undefined ? {} : { type: o.type }),
          ...(o.label === undefined ? {} : { label: o.label }),
        }),
        (b) => `${jobsTable(b.jobs)}${moreLine(b.cursor)}`,
      ),
    );
  jobs
    .command("runs <jobId>")
    .description("a job's run history, newest first")
    .option("--limit <n>", "page size, 1-100")
    .option("--cursor <cursor>", "the next page")
    .action(async (jobId: string, o: Record<string, string | undefined>) =>
      cli.print(
        await cli.client().listRuns(jobId, pageOf(o)),
        (b) => `${runsTable(b.runs)}${moreLine(b.cursor)}`,
      ),
    );
  jobs
    .command("pause <jobId>")
    .description("pause a job: it creates no runs until resumed")
    .option("--reason <text>", "why; shown on the job while it is paused, and kept in its audit trail")
    .action(async (jobId: string, o: { reason?: string }) =>
      cli.print(
        await cli.client().pauseJob(jobId, o.reason === undefined ? {} : { reason: o.reason }),
        jobTable,
      ),
    );
  jobs
    .command("trigger <jobId>")
    .description("run an active job now, beside its schedule (its own run key)")
    .action(async (jobId: string) =>
      cli.print(await cli.client().triggerJob(jobId), (run) => runsTable([run])),
    );
  jobs
    .command("backfill <jobId>")
    .description("run an active job's past firings from --from to --to (at most 1,000), once each")
    .requiredOption("--from <instant>", "first instant of the range, ISO 8601")
    .requiredOption("--to <instant>", "last instant of the range, ISO 8601, not in the future")
    .action(async (jobId: string, o: { from: string; to: string }) =>
      cli.print(
        await whileWaiting(cli, "backfilling", () =>
          cli.client().backfillJob(jobId, { from: o.from, to: o.to }),
        ),
        (b) =>
          `${b.firings} firing(s) from ${b.from} to ${b.to}: ${b.created} created, ${b.rerun} missed ones run now, ${b.existing} left as they were`,
      ),
    );
  jobs
    .command("resume <jobId>")
    .description("resume a job")
    .action(async (jobId: string) => cli.print(await cli.client().resumeJob(jobId), jobTable));
  jobs
    .command("cancel <jobId>")
    .description("cancel a job")
    .action(async (jobId: string) => cli.print(await cli.client().cancelJob(jobId), jobTable));
}

/**
 * A single long request (a backfill of up to 1,000 firings is one request): the seconds it has
 * taken, on a terminal, so that it does not look hung.
 */
async function whileWaiting<T>(cli: CliContext, what: string, call: () => Promise<T>): Promise<T> {
  const progress = cli.progress({ unit: "s" });
  const started = Date.now();
  const timer = setInterval(() => progress.update(Math.round((Date.now() - started) / 1000), what), 1000);
  try {
    return await call();
  } finally {
    clearInterval(timer);
    progress.stop();
  }
}

/** --limit and --cursor as a page request; a --limit that is not a number goes as typed, for the API to refuse. */
function pageOf(o: Record<string, string | undefined>): { limit?: number; cursor?: string } {
  return {
    ...(o.limit === undefined ? {} : { limit: Number(o.limit) }),
    ...(o.cursor === undefined ? {} : { cursor: o.cursor }),
  };
}

/** The options that define a job, shared by create and update. */
function definitionOptions(command: Command): Command {
  return command
    .option("--run-at <instant>", "run once at this ISO 8601 instant")
    .option("--cron <expr>", "cron expression")
    .option("--tz, --time-zone <zone>", "IANA time zone of the cron expression")
    .option("--dst-policy <policy>", "first-occurrence (default) | every-occurrence | skip-gap")
    .option("--interval <every>", "fixed interval: 15m, 2h, PT15M")
    .option("--jitter <window>", "spread runs over this window after each firing: seconds or PT5M")
    .option("--start-at <instant>", "first instant a recurring job may run")
    .option("--end-at <instant>", "last instant a recurring job may run")
    .option("--payload <json>", "JSON payload handed to the worker")
    .option("--missed-runs <policy>", "catch-up | run-once | skip")
    .option("--overlap-policy <policy>", "allow (default) | skip | buffer-one | cancel-previous")
    .option("--delivery <guarantee>", "at-least-once (default) | at-most-once")
    .option("--labels <pairs>", "key=value pairs, comma-separated (update: merged into the job's)")
    .option("--max-lateness <duration>", "seconds or ISO 8601 duration")
    .option("--max-attempts <n>", "1-100")
    .option("--lease-seconds <n>", "5-42600 (11 h 50 min)")
    .option("--target-https <url>", "push: POST each run, signed with your webhook secret, to this URL")
    .option("--target-lambda <arn>", "push: invoke this function with each run (with --role)")
    .option("--target-sqs <queue-url>", "push: send each run to this queue (with --role)")
    .option(
      "--role <arn>",
      "the role the dispatcher assumes for --target-lambda/--target-sqs: in your account, named as the deployment's targetRoleNames allow (jobsched-target-* by default; docs/deploy.md)",
    )
    .option(
      "--target-invocation <mode>",
      "--target-lambda: sync (default; waits at most 15 s for the function) | async (accepted is delivered, as EventBridge Scheduler invokes)",
    )
    .option("--target-timeout <seconds>", "--target-https: how long the endpoint has to answer, 1-30")
    .option("--target-concurrency <n>", "--target-https: deliveries in flight at once per dispatcher, 1-100");
}

/** The push target the options name, or undefined (the API checks the URL, ARNs and role). */
function targetOf(o: Record<string, string | undefined>): Record<string, unknown> | undefined {
  const named = [o.targetHttps, o.targetLambda, o.targetSqs].filter((t) => t !== undefined);
  if (named.length > 1) throw new CliError("give one of --target-https, --target-lambda, --target-sqs");
  const needsRole = () => {
    if (o.role === undefined) throw new CliError("--target-lambda and --target-sqs need --role <arn>");
    return o.role;
  };
  if (o.targetHttps !== undefined) {
    return given({
      kind: "https",
      url: o.targetHttps,
      timeoutSeconds: o.targetTimeout === undefined ? undefined : Number(o.targetTimeout),
      concurrency: o.targetConcurrency === undefined ? undefined : Number(o.targetConcurrency),
    });
  }
  if (o.targetLambda !== undefined) {
    return given({
      kind: "lambda",
      functionArn: o.targetLambda,
      roleArn: needsRole(),
      invocation: o.targetInvocation,
    });
  }
  if (o.targetSqs !== undefined) return { kind: "sqs", queueUrl: o.targetSqs, roleArn: needsRole() };
  return undefined;
}

/** The request fields the definition options give (those not given are left out). */
function definitionBody(o: Record<string, string | undefined>): Record<string, unknown> {
  let payload: unknown;
  if (o.payload !== undefined) {
    try {
      payload = JSON.parse(o.payload);
    } catch {
      throw new CliError("--payload is not valid JSON");
    }
  }
  const number = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  // Durations: whole seconds as a number, anything else (PT5M) as the API reads it.
  const duration = (v: string | undefined) => (v === undefined ? undefined : /^\d+$/.test(v) ? Number(v) : v);
  return given({
    runAt: o.runAt,
    cron: o.cron,
    timeZone: o.timeZone,
    dstPolicy: o.dstPolicy,
    interval: o.interval === undefined ? undefined : { every: o.interval },
    jitter: duration(o.jitter),
    startAt: o.startAt,
    endAt: o.endAt,
    payload,
    missedRuns: o.missedRuns,
    overlapPolicy: o.overlapPolicy,
    delivery: o.delivery,
    labels: o.labels === undefined ? undefined : labelsOf(o.labels),
    maxLateness: duration(o.maxLateness),
    maxAttempts: number(o.maxAttempts),
    leaseSeconds: number(o.leaseSeconds),
    target: targetOf(o),
  });
}

/** `team=billing,env=prod` as a labels object; the API checks keys and values. */
function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(",").filter(Boolean)) {
    const at = pair.indexOf("=");
    if (at < 1) throw new CliError(`--labels: "${pair}" is not key=value`);
    labels[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return labels;
}

function given(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}
