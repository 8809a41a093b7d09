import { spawn } from "node:child_process";
import { createWorker, type LeasedRun, PermanentError } from "@jobsched/worker";
import type { Command } from "commander";
import { type CliContext, CliError } from "../context";

/** `jobsched worker`: a worker that runs a shell command for each run it leases. */
export function workerCommand(program: Command, cli: CliContext): void {
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
      const g = cli.globals();
      const concurrency = Number(o.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1)
        throw new CliError("--concurrency: must be a positive integer");
      const worker = createWorker({
        endpoint: g.endpoint,
        region: g.region,
        credentials: cli.credentials(),
        types: o.types
          .split(",")
          .map((t) => t.trim())
          .filter(Boolean),
        concurrency,
        log: (line) => cli.out.error(line),
        handler: o.exec ? execHandler(o.exec) : async (run) => cli.out.log(JSON.stringify(run)),
      });
      cli.out.error(`[worker] leasing ${o.types} from ${g.endpoint}; Ctrl-C drains and stops`);
      await worker.done;
    });
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
