/**
 * The jobsched command line, one module per command (cli/commands/):
 *
 *   jobsched preview ...              offline: the next runs of a schedule
 *   jobsched jobs create|update|get|list|runs|pause|resume|cancel|trigger|backfill ...
 *   jobsched dlq list|replay ...      dead letters: list, replay one or all
 *   jobsched worker ...               a worker that runs a command for each run it leases
 *   jobsched console                  the web console on 127.0.0.1 (issue 19, in progress)
 *
 * API commands call the API through @jobsched/client, signed with SigV4, with credentials from the standard AWS chain
 * (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE / --profile, SSO, instance roles...).
 * --endpoint (or JOBSCHED_ENDPOINT) picks the local runtime or a deployed API. `npm ci` and
 * `npm start` bundle this into dist/jobsched.mjs (scripts/build-cli.mjs), which bin/jobsched.mjs
 * runs with no dev dependency.
 */
import { JobschedError } from "@jobsched/client";
import { Command, CommanderError, Option } from "commander";
import { ValidationError } from "../lambdas/core/errors";
import { consoleCommand } from "./commands/console";
import { dlqCommand } from "./commands/dlq";
import { exportCommand } from "./commands/export";
import { importCommand } from "./commands/import";
import { jobsCommand } from "./commands/jobs";
import { previewCommand } from "./commands/preview";
import { webhookSecretCommand } from "./commands/webhook-secret";
import { workerCommand } from "./commands/worker";
import { CliError, cliContext, type Out } from "./context";

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
  const cli = cliContext(program, out);
  for (const command of [
    previewCommand,
    jobsCommand,
    dlqCommand,
    workerCommand,
    consoleCommand,
    webhookSecretCommand,
    importCommand,
    exportCommand,
  ]) {
    command(program, cli);
  }
  program.hook("postAction", () => {
    exitCodes.code = 0;
  });
  return program;
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
    if (error instanceof JobschedError) {
      out.error(`jobsched: HTTP ${error.status}: ${error.message}`);
      return 1;
    }
    if (error instanceof ValidationError || error instanceof CliError) {
      out.error(`jobsched: ${error.message}`);
      return error instanceof ValidationError ? 2 : 1;
    }
    out.error(`jobsched: ${(error as Error).message}`);
    return 1;
  }
}
