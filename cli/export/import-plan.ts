import type { ExportedJob } from "./exported-job";

/** A one-off job may be created this far in the past (the API's MAX_PAST_RUN_AT_MS). */
const PAST_RUN_AT_MS = 5 * 60_000;

/** What `jobsched import jobs` does with one line of an export. */
export type ImportStep =
  | {
      readonly kind: "create";
      readonly line: number;
      readonly jobId: string;
      /** The create body; a job paused in the source is created paused, with its reason. */
      readonly body: Record<string, unknown>;
      readonly paused: boolean;
      readonly note?: string;
    }
  | { readonly kind: "skip"; readonly line: number; readonly jobId: string; readonly reason: string }
  | { readonly kind: "invalid"; readonly line: number; readonly problem: string };

/**
 * The step for one exported job, at `now` (epoch ms). Active and paused jobs are created again
 * with their definition, labels and jitter; the idempotency key is the job's own, or
 * `import:<jobId>`, so a second import of the same file creates nothing. A paused job is
 * created paused (no run is fired before it is). Completed and cancelled jobs have nothing left
 * to run and are skipped, and so is a recurring job whose schedule has ended. A one-off job whose
 * run the source already created (it has no next run) is skipped: that run finishes where it is,
 * and creating it again would run it twice. A one-off whose time passed while it moved runs at
 * once (when resumed, if paused), unless its missed-runs policy is `skip`.
 */
export function importStep(line: number, value: unknown, now: number): ImportStep {
  const exported = asExportedJob(value);
  if (typeof exported === "string") return { kind: "invalid", line, problem: exported };
  const { jobId, status } = exported;
  if (status === "completed" || status === "cancelled")
    return { kind: "skip", line, jobId, reason: `${status}: nothing left to run` };
  const body: Record<string, unknown> = {
    ...exported.job,
    idempotencyKey: exported.job.idempotencyKey ?? `import:${jobId}`,
  };
  let note: string | undefined;
  if (typeof body.runAt !== "string") {
    const endAt = typeof body.endAt === "string" ? Date.parse(body.endAt) : Number.POSITIVE_INFINITY;
    if (endAt <= now)
      return { kind: "skip", line, jobId, reason: "its schedule ended (endAt passed): nothing left to run" };
  } else {
    if (exported.nextRunAt === undefined)
      return {
        kind: "skip",
        line,
        jobId,
        reason: "its run was already created where it was exported from, and finishes there",
      };
    if (Date.parse(body.runAt) < now - PAST_RUN_AT_MS) {
      if (body.missedRuns === "skip")
        return {
          kind: "skip",
          line,
          jobId,
          reason: "its time passed while it moved, and its missedRuns is skip",
        };
      body.runAt = new Date(Math.ceil(now / 1000) * 1000).toISOString();
      note = `its time (${exported.job.runAt}) passed while it moved: it runs at once`;
    }
  }
  const paused = status === "paused";
  if (paused) body.paused = exported.pauseReason ? { reason: exported.pauseReason } : {};
  return { kind: "create", line, jobId, body, paused, ...(note ? { note } : {}) };
}

/** The line as an exported job, or what is wrong with it. */
function asExportedJob(value: unknown): ExportedJob | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not a JSON object";
  const line = value as Partial<Record<keyof ExportedJob, unknown>>;
  if (line.exportVersion !== 1) return "exportVersion: must be 1 (a line written by jobsched export)";
  if (typeof line.jobId !== "string" || line.jobId === "") return "jobId: missing";
  if (!["active", "paused", "completed", "cancelled"].includes(String(line.status)))
    return "status: must be active, paused, completed or cancelled";
  if (typeof line.job !== "object" || line.job === null || Array.isArray(line.job))
    return "job: missing (the create body)";
  if (line.nextRunAt !== undefined && typeof line.nextRunAt !== "string")
    return "nextRunAt: must be a string";
  if (line.pauseReason !== undefined && typeof line.pauseReason !== "string")
    return "pauseReason: must be a string";
  return value as ExportedJob;
}
