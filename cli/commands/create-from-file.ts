import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { CreateJobInput } from "@jobsched/client";
import type { CreateJobsItemResponse } from "@jobsched/contract";
import { BATCH_BYTES, batchesOf, createBatch } from "../bulk-create";
import { type CliContext, CliError } from "../context";
import { jsonLines } from "../json-lines";

/** Longest --idempotency-key: a line's key adds `#` and 27 characters, within the API's 256. */
const MAX_KEY_LENGTH = 200;

/** One line of the file: its number (from 1) and its job, or why it is not one. */
type Line =
  | { readonly number: number; readonly job: unknown; readonly bytes: number }
  | { readonly number: number; readonly problem: string };

/** A line's result, as printed (--json prints these objects). */
interface LineResult {
  readonly line: number;
  readonly status: number;
  readonly jobId?: string;
  readonly nextRunAt?: string;
  readonly error?: { readonly code: string; readonly message: string; readonly field?: string };
}

/**
 * `jobsched jobs create --file jobs.jsonl` (`-` reads standard input): one create body per line,
 * sent 100 at a time to POST /api/v1/jobs/batch. With --idempotency-key, a line without a key of
 * its own gets `<key>#<digest of the line and which copy of it this is>`: the same file sent
 * again (after a failure half way, or with lines added or removed) creates only what is
 * missing. Lines a quota refused are sent again after its wait (createBatch); a batch whose
 * request failed is an error on each of its lines, and the rest go on. Prints a result per
 * line; fails if any line failed.
 */
export async function createFromFile(
  cli: CliContext,
  file: string,
  idempotencyKey: string | undefined,
): Promise<void> {
  if (idempotencyKey !== undefined && idempotencyKey.length > MAX_KEY_LENGTH)
    throw new CliError(`--idempotency-key: at most ${MAX_KEY_LENGTH} characters`);
  const name = file === "-" ? "standard input" : file;
  const lines = parseLines(readFileSync(file === "-" ? 0 : file, "utf8"), idempotencyKey);
  if (lines.length === 0) throw new CliError(`${name}: no jobs (one JSON create body per line)`);
  const results: LineResult[] = [];
  const refuse = (line: number, message: string): LineResult => ({
    line,
    status: 400,
    error: { code: "ValidationError", message },
  });
  const sendable: Array<Extract<Line, { job: unknown }>> = [];
  for (const line of lines) {
    if ("problem" in line) results.push(refuse(line.number, line.problem));
    else if (line.bytes > BATCH_BYTES)
      results.push(refuse(line.number, "larger than a bulk create takes (3.5 MiB)"));
    else sendable.push(line);
  }
  const progress = cli.progress({ unit: "jobs", total: sendable.length });
  let sent = 0;
  for (const batch of batchesOf(sendable)) {
    progress.update(sent, `line ${batch[0]?.number ?? ""}`);
    sent += batch.length;
    try {
      const answered = await createBatch(
        (jobs) => cli.client().createJobs(jobs as CreateJobInput[]),
        batch.map((l) => l.job),
      );
      results.push(...answered.map((item, i) => lineResult(batch[i]?.number ?? 0, item)));
    } catch (error) {
      const message = `the batch's request failed: ${error instanceof Error ? error.message : String(error)}`;
      for (const line of batch)
        results.push({ line: line.number, status: 0, error: { code: "RequestFailed", message } });
    }
  }
  progress.update(sent, "done");
  progress.stop();
  results.sort((a, b) => a.line - b.line);
  const failed = results.filter((r) => r.error !== undefined).length;
  cli.print({ results, failed }, (b) => b.results.map(humanLine).join("\n"));
  if (failed > 0) throw new CliError(`${failed} of ${results.length} lines failed (above)`);
}

function lineResult(line: number, item: CreateJobsItemResponse): LineResult {
  if (item.error) {
    // The API names the item (`jobs.<index>`); the file's reader knows the line.
    const strip = (text: string) => text.replace(/^jobs\.\d+\.?/, "").replace(/^: /, "");
    const field = item.error.field === undefined ? undefined : strip(item.error.field);
    return {
      line,
      status: item.status,
      error: { code: item.error.code, message: strip(item.error.message), ...(field ? { field } : {}) },
    };
  }
  return {
    line,
    status: item.status,
    ...(item.jobId === undefined ? {} : { jobId: item.jobId }),
    ...(item.nextRunAt === undefined ? {} : { nextRunAt: item.nextRunAt }),
  };
}

function humanLine(r: LineResult): string {
  if (r.error) return `line ${r.line}  ${r.status === 0 ? "failed" : r.status} ${r.error.message}`;
  return `line ${r.line}  ${r.jobId}  ${r.status === 201 ? "created" : "existing"}  next run ${r.nextRunAt ?? "-"}`;
}

function parseLines(text: string, idempotencyKey: string | undefined): Line[] {
  const copies = new Map<string, number>();
  return jsonLines(text).map((line): Line => {
    if ("problem" in line) return line;
    const { number, source } = line;
    let job = line.value;
    const keyless =
      typeof job === "object" && job !== null && !Array.isArray(job) && !("idempotencyKey" in job);
    if (idempotencyKey !== undefined && keyless) {
      // Which copy of this very line it is: two equal lines are two jobs, and stay two.
      const copy = (copies.get(source) ?? 0) + 1;
      copies.set(source, copy);
      const digest = createHash("sha256").update(`${copy}\u0000${source}`).digest("base64url").slice(0, 27);
      job = { ...(job as object), idempotencyKey: `${idempotencyKey}#${digest}` };
    }
    return { number, job, bytes: Buffer.byteLength(JSON.stringify(job), "utf8") + 1 };
  });
}
