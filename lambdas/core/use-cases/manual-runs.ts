import { backfillRequest, triggerRequest } from "@jobsched/contract";
import type { Caller } from "../caller";
import { runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { ConflictError, ValidationError } from "../errors";
import { parseInstant } from "../instant";
import { type Job, JobStatus } from "../job";
import { newRun } from "../lifecycle/creation";
import { isMade, runsKeptSince } from "../made-runs";
import { type Run, RunStatus } from "../run";
import { firingsAfter, nextFiring } from "../schedule/schedule";
import { parseWith } from "../validation";
import { runView } from "../views";
import { callersJob } from "./get-job";

/**
 * Runs a caller asks for by hand, beside the ones the sweep makes from the schedule:
 *
 * - trigger: one run now, with its own run key (the instant of the request, moved on by a
 *   millisecond should that be one of the job's firings or an earlier manual run's), so it
 *   never takes a firing's place;
 * - backfill: a run for each firing of a past range under the job's DST policy and jitter,
 *   once per firing: a firing with a record is left as it is, except a `missed` one (it never
 *   ran), which runs now under its own run key. Only firings the sweep has handled (before the
 *   job's next run) and that are due by now are backfilled; at most MAX_BACKFILL_FIRINGS a call.
 *
 * Both need an active job (a paused job's runs would be recorded missed at the worker) and are
 * marked with their `origin`, so maxLateness never records them missed.
 */
export const MAX_BACKFILL_FIRINGS = 1_000;
/** Creates in flight at once during a backfill: DynamoDB's and the API function's comfort. */
const PARALLEL_CREATES = 25;

async function activeJob(deps: SchedulerDeps, caller: Caller, jobId: string, action: string): Promise<Job> {
  const job = await callersJob(deps, caller, jobId);
  if (job.status !== JobStatus.Active) {
    throw new ConflictError(`job ${jobId} is ${job.status}; only an active job can ${action}`, "jobId");
  }
  return job;
}

async function send(deps: SchedulerDeps, runs: readonly Run[]): Promise<void> {
  // A send lost to a crash is repaired: the run waits in the repair index from its checkAt.
  if (runs.length > 0)
    await deps.queue.send(runs.map((run) => ({ message: runMessageOf(run), delaySeconds: 0 })));
}

export async function triggerJob(deps: SchedulerDeps, caller: Caller, jobId: string, body: unknown) {
  parseWith(triggerRequest, body);
  const job = await activeJob(deps, caller, jobId, "be triggered");
  const now = deps.clock.now();
  const graceMs = deps.settings.repairGraceSeconds * 1000;
  for (let at = now; at < now + 100; at++) {
    if (nextFiring(job.schedule, at - 1)?.at === at) continue; // a firing's own run key
    const run: Run = { ...newRun(job, at, now, graceMs), origin: "manual" };
    if ((await deps.runs.createRun(run)) === "exists") continue; // a manual run of the same instant
    await send(deps, [run]);
    deps.log.info("job triggered", { jobId, runId: run.runId, by: caller.principal });
    return runView(run);
  }
  throw new ConflictError(`job ${jobId}: too many runs asked for at once; try again`, "jobId");
}

export interface BackfillResult {
  readonly from: string;
  readonly to: string;
  /** Firings in the range that the backfill looked at. */
  readonly firings: number;
  /** Firings that had no run and got one. */
  readonly created: number;
  /** Firings recorded missed that run now. */
  readonly rerun: number;
  /** Firings whose run exists (ran, runs, or failed): left as they are. */
  readonly existing: number;
}

/**
 * The firings among `firings` whose run was made and is not written (decision 0051): carried
 * by their messages, in flight. A firing in the range the job's advances made (isMade) with no
 * item of its own, not covered by a missed record that stands for a backlog, is in flight.
 * One read over the range, and one of the run before it (a backlog's record may cover it).
 */
async function madeAndUnwritten(
  deps: SchedulerDeps,
  job: Job,
  firings: readonly number[],
): Promise<Set<number>> {
  const keptSince = runsKeptSince(deps.settings, deps.clock.now());
  const candidates = firings.filter((at) => isMade(job, at, keptSince));
  const first = candidates[0];
  const last = candidates.at(-1);
  if (first === undefined || last === undefined) return new Set();
  const [inRange, before] = await Promise.all([
    deps.runs.listRunsBetween(job.jobId, first, last),
    deps.runs.latestRunBefore(job.jobId, first),
  ]);
  const stored = before ? [before, ...inRange] : inRange;
  const written = new Set(stored.map((run) => run.scheduledFor));
  const summarised = (at: number) =>
    stored.some((run) => run.missedThrough !== undefined && run.scheduledFor < at && at <= run.missedThrough);
  return new Set(candidates.filter((at) => !written.has(at) && !summarised(at)));
}

export async function backfillJob(
  deps: SchedulerDeps,
  caller: Caller,
  jobId: string,
  body: unknown,
): Promise<BackfillResult> {
  const request = parseWith(backfillRequest, body);
  const from = parseInstant(request.from) as number;
  const to = parseInstant(request.to) as number;
  if (to < from) throw new ValidationError("to: must not be before from", "to");
  const now = deps.clock.now();
  if (to > now)
    throw new ValidationError("to: must not be in the future; future firings run on their own", "to");
  const job = await activeJob(deps, caller, jobId, "be backfilled");

  // Firings at or after the job's next run are the sweep's to make (it may be behind).
  const until = Math.min(to, (job.nextRunAt ?? Number.POSITIVE_INFINITY) - 1);
  const firings: number[] = [];
  for (const { at } of firingsAfter(job.schedule, from - 1)) {
    if (at > until) break;
    if (firings.length === MAX_BACKFILL_FIRINGS) {
      throw new ValidationError(
        `to: the range holds more than ${MAX_BACKFILL_FIRINGS} firings; backfill it in parts`,
        "to",
      );
    }
    firings.push(at);
  }

  const graceMs = deps.settings.repairGraceSeconds * 1000;
  const inFlight = await madeAndUnwritten(deps, job, firings);
  const outcomes: Array<"created" | "rerun" | "existing"> = [];
  for (let i = 0; i < firings.length; i += PARALLEL_CREATES) {
    const batch = firings.slice(i, i + PARALLEL_CREATES);
    const made = await Promise.all(
      batch.map(async (at): Promise<{ run?: Run; outcome: "created" | "rerun" | "existing" }> => {
        if (inFlight.has(at)) return { outcome: "existing" };
        const run: Run = { ...newRun(job, at, now, graceMs), origin: "backfill" };
        if ((await deps.runs.createRun(run)) === "created") return { run, outcome: "created" };
        const existing = await deps.runs.getRun(job.jobId, at);
        if (existing?.status !== RunStatus.Missed || existing.missedCount !== undefined) {
          return { outcome: "existing" };
        }
        const rerun = await deps.runs.replayRun(
          job.jobId,
          at,
          { by: caller.principal, now, checkAt: now + graceMs },
          RunStatus.Missed,
        );
        return rerun ? { run: rerun, outcome: "rerun" } : { outcome: "existing" };
      }),
    );
    await send(
      deps,
      made.flatMap((m) => (m.run ? [m.run] : [])),
    );
    outcomes.push(...made.map((m) => m.outcome));
  }
  const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
  deps.log.info("job backfilled", { jobId, by: caller.principal, firings: firings.length });
  return {
    from: request.from,
    to: request.to,
    firings: firings.length,
    created: count("created"),
    rerun: count("rerun"),
    existing: count("existing"),
  };
}
