import type { Caller } from "../caller";
import { runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { NotFoundError } from "../errors";
import { parseRunId } from "../ids";
import { formatInstant } from "../instant";
import { type Run, RunStatus } from "../run";
import { pageQuery } from "../schemas";
import { parseWith } from "../validation";
import { runView } from "../views";

/** A dead letter as the API shows it: the run, its job and type, its last error, its lineage. */
export function deadLetterView(run: Run) {
  return {
    ...runView(run),
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
 * its replay counted. Another tenant's run, or one not dead-lettered, is not found.
 */
export async function replayDeadLetter(deps: SchedulerDeps, caller: Caller, runId: string) {
  const key = parseRunId(runId);
  const run = key ? await deps.runs.getRun(key.jobId, key.scheduledFor) : undefined;
  if (!run || run.tenant !== caller.tenant || run.status !== RunStatus.DeadLettered) {
    throw new NotFoundError(`dead letter ${runId} not found`, "runId");
  }
  const replayed = await replay(deps, caller, run);
  if (!replayed) throw new NotFoundError(`dead letter ${runId} not found`, "runId");
  return deadLetterView(replayed);
}

/** POST /api/v1/dead-letters/replay: replays every one of the caller's dead letters. */
export async function replayAllDeadLetters(deps: SchedulerDeps, caller: Caller) {
  let replayed = 0;
  // Replayed runs leave the index, so the first page is always the next one to do.
  for (;;) {
    const page = await deps.runs.listDeadLetters(caller.tenant, 100);
    const done = await Promise.all(page.items.map((run) => replay(deps, caller, run)));
    const count = done.filter((run) => run !== undefined).length;
    replayed += count;
    if (page.cursor === undefined || count === 0) break;
  }
  return { replayed };
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
