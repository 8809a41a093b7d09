import { readFileSync } from "node:fs";
import type { CreateJobInput } from "@jobsched/client";
import type { CreateJobsItemResponse } from "@jobsched/contract";
import { batchesOf, createBatch } from "../bulk-create";
import { type CliContext, CliError } from "../context";
import { type ImportStep, importStep } from "../export/import-plan";
import { jsonLines } from "../json-lines";

/** A line's result, as printed (--json prints these objects). */
export interface ImportLineResult {
  readonly line: number;
  /** The job's id in the export. */
  readonly jobId?: string;
  readonly result: "created" | "existing" | "skipped" | "failed";
  /** The job's id here (the same when the job had an idempotency key of its own). */
  readonly newJobId?: string;
  readonly paused?: boolean;
  readonly nextRunAt?: string;
  readonly reason?: string;
}

type Create = Extract<ImportStep, { kind: "create" }> & { readonly bytes: number };

/**
 * `jobsched import jobs jobs.jsonl` (`-` reads standard input): the jobs of a `jobsched export`,
 * created here through bulk create (100 to a request, oldest first, quota refusals sent again
 * after their wait), paused ones created paused. Idempotent: each job's key is its own or
 * `import:<its id>`, so the same file again (after a failure half way) creates only what is
 * missing. Prints a result per line; fails if any line failed.
 */
export async function importJobs(cli: CliContext, file: string): Promise<void> {
  const lines = jsonLines(readFileSync(file === "-" ? 0 : file, "utf8"));
  const now = Date.now();
  const results: ImportLineResult[] = [];
  const creates: Create[] = [];
  for (const line of lines) {
    if ("problem" in line) {
      results.push({ line: line.number, result: "failed", reason: line.problem });
      continue;
    }
    const step = importStep(line.number, line.value, now);
    if (step.kind === "invalid") results.push({ line: step.line, result: "failed", reason: step.problem });
    else if (step.kind === "skip")
      results.push({ line: step.line, jobId: step.jobId, result: "skipped", reason: step.reason });
    else creates.push({ ...step, bytes: Buffer.byteLength(JSON.stringify(step.body), "utf8") + 1 });
  }
  if (results.length === 0 && creates.length === 0)
    throw new CliError(`${file === "-" ? "standard input" : file}: no jobs (the lines of jobsched export)`);

  // Oldest first (an export is newest first): the jobs list here in the order they had there.
  const progress = cli.progress({ unit: "jobs", total: creates.length });
  let sent = 0;
  for (const batch of batchesOf([...creates].reverse())) {
    progress.update(sent, `line ${batch[0]?.line ?? ""}`);
    sent += batch.length;
    let answers: CreateJobsItemResponse[];
    try {
      answers = await createBatch(
        (jobs) => cli.client().createJobs(jobs as CreateJobInput[]),
        batch.map((step) => step.body),
      );
    } catch (error) {
      const reason = `the batch's request failed: ${error instanceof Error ? error.message : String(error)}`;
      for (const step of batch)
        results.push({ line: step.line, jobId: step.jobId, result: "failed", reason });
      continue;
    }
    for (const [i, step] of batch.entries()) results.push(finish(step, answers[i]));
  }
  progress.update(sent, "done");
  progress.stop();
  results.sort((a, b) => a.line - b.line);
  const failed = results.filter((r) => r.result === "failed").length;
  cli.print({ results, failed }, (b) => b.results.map(humanLine).join("\n"));
  if (failed > 0) throw new CliError(`${failed} of ${results.length} lines failed (above)`);
}

/** A line's result from its item's answer. */
function finish(step: Create, answer: CreateJobsItemResponse | undefined): ImportLineResult {
  const base = { line: step.line, jobId: step.jobId, ...(step.paused ? { paused: true } : {}) };
  if (answer?.status === 409 && answer.error?.field?.endsWith("idempotencyKey")) {
    // Its key's job exists with another body: an earlier import of a one-off whose time had
    // passed (each import gives it the time of the moment). The job as first imported stays.
    return { ...base, result: "existing", reason: "imported before (the job as first imported is kept)" };
  }
  if (answer === undefined || answer.error || answer.jobId === undefined) {
    const message = answer?.error?.message.replace(/^jobs\.\d+\.?/, "").replace(/^: /, "");
    return { ...base, result: "failed", reason: message ?? "no answer for this job" };
  }
  return {
    ...base,
    result: answer.status === 201 ? "created" : "existing",
    newJobId: answer.jobId,
    ...(answer.nextRunAt ? { nextRunAt: answer.nextRunAt } : {}),
    ...(step.note ? { reason: step.note } : {}),
  };
}

function humanLine(r: ImportLineResult): string {
  const what = r.result + (r.paused ? " (paused)" : "");
  const next = r.nextRunAt ? `  next run ${r.nextRunAt}` : "";
  const reason = r.reason ? `  ${r.reason}` : "";
  return `line ${r.line}  ${r.jobId ?? "-"}  ${what}${r.newJobId && r.newJobId !== r.jobId ? ` as ${r.newJobId}` : ""}${next}${reason}`;
}
