import { readFileSync } from "node:fs";
import type { CreateJobsResponse } from "@jobsched/contract";
import { createBatch } from "../bulk-create";
import { type CliContext, CliError } from "../context";

/** Items a batch carries: the API's limit. */
const BATCH_JOBS = 100;
/** A batch's body stays under the API's 4 MiB, with room for the envelope. */
const BATCH_BYTES = 3.5 * 1024 * 1024;

/** One line of the file: its number (from 1) and its job, or why it is not one. */
type Line =
  | { readonly number: number; readonly job: unknown }
  | { readonly number: number; readonly problem: string };

/**
 * `jobsched jobs create --file jobs.jsonl` (`-` reads standard input): one create body per line,
 * sent 100 at a time to POST /api/v1/jobs/batch. With --idempotency-key, a line without a key
 * of its own gets `<key>#<line number>`, so the same file sent again (after a failure half way,
 * say) creates only what is missing. Lines a quota refused are sent again after its wait
 * (createBatch). Prints a result per line; fails if any line failed.
 */
export async function createFromFile(
  cli: CliContext,
  file: string,
  idempotencyKey: string | undefined,
): Promise<void> {
  const lines = parseLines(readFileSync(file === "-" ? 0 : file, "utf8"), idempotencyKey);
  if (lines.length === 0) throw new CliError(`${file}: no jobs (one JSON create body per line)`);
  const results: Array<{ line: number; status: number; text: string }> = [];
  for (const line of lines) {
    if ("problem" in line) results.push({ line: line.number, status: 400, text: line.problem });
  }
  for (const batch of batchesOf(lines.filter((l): l is Extract<Line, { job: unknown }> => "job" in l))) {
    const answered = await createBatch(
      (jobs) => cli.call<CreateJobsResponse>("POST", "/api/v1/jobs/batch", { body: { jobs } }),
      batch.map((l) => l.job),
    );
    for (const item of answered) {
      const line = batch[item.index]?.number ?? -1;
      const text = item.error
        ? `${item.status} ${item.error.message.replace(/^jobs\.\d+\.?/, "")}`
        : `${item.jobId}  ${item.status === 201 ? "created" : "existing"}  next run ${item.nextRunAt ?? "-"}`;
      results.push({ line, status: item.status, text });
    }
  }
  results.sort((a, b) => a.line - b.line);
  const failed = results.filter((r) => r.status >= 400);
  cli.print({ results, failed: failed.length }, (b) =>
    b.results.map((r) => `line ${r.line}  ${r.text}`).join("\n"),
  );
  if (failed.length > 0) throw new CliError(`${failed.length} of ${results.length} lines failed (above)`);
}

function parseLines(text: string, idempotencyKey: string | undefined): Line[] {
  const lines: Line[] = [];
  text.split("\n").forEach((raw, i) => {
    const number = i + 1;
    if (raw.trim() === "") return;
    let job: unknown;
    try {
      job = JSON.parse(raw);
    } catch {
      lines.push({ number, problem: "not valid JSON" });
      return;
    }
    const keyless =
      typeof job === "object" && job !== null && !Array.isArray(job) && !("idempotencyKey" in job);
    lines.push({
      number,
      job:
        idempotencyKey && keyless
          ? { ...(job as object), idempotencyKey: `${idempotencyKey}#${number}` }
          : job,
    });
  });
  return lines;
}

/** Batches of at most BATCH_JOBS lines and about BATCH_BYTES of JSON (a larger line goes alone). */
function batchesOf<T extends { readonly job: unknown }>(lines: readonly T[]): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const line of lines) {
    const size = Buffer.byteLength(JSON.stringify(line.job), "utf8") + 1;
    if (current.length === BATCH_JOBS || (current.length > 0 && bytes + size > BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(line);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
