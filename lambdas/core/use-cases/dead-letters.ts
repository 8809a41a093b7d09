import type { DeadLetterResponse } from "@jobsched/contract";
import { pageQuery } from "@jobsched/contract";
import type { Caller } from "../caller";
import { runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { ConflictError, NotFoundError } from "../errors";
import { parseRunId } from "../ids";
import { formatInstant } from "../instant";
import { JobStatus } from "../job";
import { type Run, RunStatus } from "../run";
import { parseWith } from "../validation";
import { runView } from "../views";

/** A dead letter as the API shows it: the run, its job and type, its last error, its lineage. */
export function deadLetterView(run: Run): DeadLetterResponse {
  return {
    ...runView(run),
    // Not in the dead-letter index's projection (its entries stay small): a run's failed
    // attempts are on its job's runs (decision 0062). Left out here too, so every store agrees.
    failedAttempts: undefined,
    jobId: run.jobId,
    type: run.type,
    deadLetteredAt: run.finishedAt === undefined ? undefined : formatInstant(run.finishedAt),
    replays: run.replays ?? 0,
  };
}

/** GET /api/v1/dead-letters: the caller's dead-lettered runs, most recent first. */
export async function listDeadLetters(deps: Pick<SchedulerDeps, "runs">, caller: Caller, query: unknown) {
  const q = parseWith(pageQuery, query, "query");
  const page = await deps.runs.listDeadLetters(caller.tenant, q.limit, q.cursor);
  return {
    deadLetters: page.items.map(deadLetterView),
    ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
  };
}

/**
 * POST /api/v1/dead-letters/{runId}/replay: the run goes back to pending with its attempts
 * reset and runs again now, under the same run key (so downstream idempotency still holds),
 * its replay counted. Another tenant's run, or one not dead-lettered, is not found. A paused
 * job's dead letter is refused (409): replayed, it would only be recorded missed at once.
 */
export async function replayDeadLetter(deps: SchedulerDeps, caller: Caller, runId: string) {
  const key = parseRunId(runId);
  const run = key ? await deps.runs.getRun(key.jobId, key.scheduledFor) : undefined;
  if (!run || run.tenant !== caller.tenant || run.status !== RunStatus.DeadLettered) {
    throw new NotFoundError(`dead letter ${runId} not found`, "runId");
  }
  const job = await deps.jobs.getJob(run.jobId);
  if (job?.status === JobStatus.Paused) {
    throw new ConflictError(`job ${run.jobId} is paused: resume it, then replay its dead letters`, "runId");
  }
  const replayed = await replay(deps, caller, run);
  if (!replayed) throw new NotFoundError(`dead letter ${runId} not found`, "runId");
  return deadLetterView(replayed);
}

/** Replay-all stops asking for more pages after this, well inside API Gateway's 29 s. */
export const REPLAY_ALL_BUDGET_MS = 15_000;

/**
 * POST /api/v1/dead-letters/replay: replays the caller's dead letters, page by page, for at
 * most REPLAY_ALL_BUDGET_MS; `complete: false` says there are more (call again). Dead letters
 * of paused jobs are left where they are and counted in `skippedPaused`.
 */
export async function replayAllDeadLetters(deps: SchedulerDeps, caller: Caller) {
  const deadline = deps.clock.now() + REPLAY_ALL_BUDGET_MS;
  let replayed = 0;
  let skippedPaused = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.runs.listDeadLetters(caller.tenant, 100, cursor);
    const jobs = await deps.jobs.getJobs([...new Set(page.items.map((run) => run.jobId))]);
    const paused = (run: Run) => jobs.get(run.jobId)?.status === JobStatus.Paused;
    skippedPaused += page.items.filter(paused).length;
    const done = await Promise.all(
      page.items.filter((run) => !paused(run)).map((run) => replay(deps, caller, run)),
    );
    replayed += done.filter((run) => run !== undefined).length;
    // A replayed run leaves the index; the page's last key still marks where the next begins.
    cursor = page.cursor;
  } while (cursor !== undefined && deps.clock.now() < deadline);
  return { replayed, skippedPaused, complete: cursor === undefined };
}

async function replay(deps: SchedulerDeps, caller: Caller, run: Run): Promise<Run | undefined> {
  const now = deps.clock.now();
  const replayed = await deps.runs.replayRun(run.jobId, run.scheduledFor, {
    by: caller.principal,
    now,
    checkAt: now + deps.settings.repairGraceSeconds * 1000,
  });
  if (!replayed) return undefined;
  await deps.queue.send([{ message: runMessageOf(replayed), delaySeconds: 0 }]);
  deps.log.info("dead letter replayed", { runId: run.runId, by: caller.principal });
  return replayed;
}
