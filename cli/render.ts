import type {
  JobResponse,
  JobSummaryResponse,
  Preview,
  RunResponse,
  ScheduleResponse,
} from "@jobsched/contract";
import { table } from "./tables";

/** The human forms of the API's answers, typed by the contract's response schemas. */
const str = (v: unknown) => (v === undefined || v === null ? "" : String(v));

export function previewTable(preview: Preview): string {
  const rows = preview.runs.map((run) => {
    const notes = [dstNote(run)];
    if (run.firing) notes.push(`jitter +${run.jitter} after the firing at ${run.firing}`);
    if (run.skippedLocal) notes.push(`DST skipped ${run.skippedLocal.join(", ")}: not run (skip-gap)`);
    return [run.at, run.local, notes.filter(Boolean).join("; ")];
  });
  return rows.length === 0
    ? "(no runs at or after --from)"
    : table(["UTC", `local (${preview.timeZone})`, ""], rows);
}

function dstNote(run: Preview["runs"][number]): string {
  switch (run.dst) {
    case "moved":
      return `moved by DST (scheduled ${run.scheduledLocal?.join(", ")})`;
    case "merged":
      return `DST merged ${run.scheduledLocal?.join(", ")} into one run`;
    case "repeated":
      return "local time happens twice; this is the first";
    case "second-occurrence":
      return "local time happens twice; this is the second (every-occurrence)";
    case undefined:
      return "";
  }
}

export function scheduleText(job: ScheduleResponse): string {
  if (job.cron) return `cron ${job.cron}`;
  if (job.interval) return `every ${job.interval.every}`;
  return `at ${str(job.runAt)}`;
}

export function jobTable(job: JobResponse): string {
  const dst = job.dstPolicy && job.dstPolicy !== "first-occurrence" ? ` (DST: ${job.dstPolicy})` : "";
  const jitter = job.jitter ? `, jitter ${job.jitter}` : "";
  const schedule = `${job.cron ? `cron "${job.cron}" ${str(job.timeZone)}${dst}` : scheduleText(job)}${jitter}`;
  const lines = [
    `job        ${job.jobId}`,
    `type       ${job.type}`,
    `status     ${job.status}`,
    `schedule   ${schedule}`,
    `next run   ${job.nextRunAt ?? "-"}`,
  ];
  if (job.overlapPolicy !== "allow") lines.push(`overlap    ${job.overlapPolicy}`);
  if (job.delivery !== "at-least-once") lines.push(`delivery   ${job.delivery}`);
  if (job.pauseReason !== undefined) lines.push(`paused     ${job.pauseReason}`);
  if (job.runs.length > 0) lines.push("", runsTable(job.runs));
  return lines.join("\n");
}

export function jobsTable(jobs: readonly JobSummaryResponse[]): string {
  return table(
    ["JOB", "TYPE", "STATUS", "NEXT RUN", "SCHEDULE"],
    jobs.map((j) => [j.jobId, j.type, j.status, j.nextRunAt ?? "-", scheduleText(j)]),
  );
}

export function runsTable(runs: readonly RunResponse[]): string {
  return table(
    ["SCHEDULED FOR", "STATUS", "ATTEMPT", "FENCE", "FINISHED", "ERROR"],
    runs.map((r) => [
      r.scheduledFor,
      r.origin ? `${r.status} (${r.origin})` : r.status,
      str(r.attempt),
      str(r.fence),
      str(r.finishedAt),
      str(r.error),
    ]),
  );
}
