import {
  baseLeadSecondsOf,
  DELIVERY_LEAD_SECONDS,
  delaySecondsUntil,
  madeRunMessageOf,
  requestTagOf,
} from "../delivery";
import type { SchedulerDeps } from "../deps";
import { isFiledAhead, type Job, JobStatus } from "../job";
import { aheadKeyOf, bucketOf, bucketStart, groupOf } from "../keys";
import { missedRun, scheduledRun } from "../lifecycle/creation";
import { chunksOf, forEachLimited } from "../limited";
import { missedRunOptionsOf, planRuns } from "../missed-runs";
import type { AheadEntry } from "../ports";
import { endJobAfter } from "./end-job";

/** How many hours of a group's ahead partitions one sweep catches up on after an outage. */
export const MAX_AHEAD_CATCH_UP_BUCKETS = 48;

/** What one group's sweep found in the due index's ahead partitions (decision 0058). */
export interface AheadRead {
  /** The range read: from the group's ahead cursor to `through` (the horizon, or short of it). */
  readonly from: number;
  readonly through: number;
  /** The jobs still made ahead at their entry's firing, read from the table (not the index). */
  readonly jobs: ReadonlyArray<Job & { readonly madeAheadAt: number }>;
  readonly entriesRead: number;
  readonly readUnits: number;
  /** Whether the cursor should be written after the sends: it moves into another hour. */
  readonly crossesHour: boolean;
}

/**
 * Reads a group's one-offs made ahead whose firing is from its ahead cursor to the horizon. A
 * create files one at least the lookahead and the cursor margin ahead of its own clock
 * (madeAheadBeyondMs), so no entry lands in a range a sweep has read: the cursor is the whole
 * bookkeeping, and a sent one-off's job is never written. A group never swept this way starts an
 * hour back, as the due cursor does. Entries the index shows but whose job has moved (a schedule
 * change superseded the run, a cancel) are read in the table and left.
 */
export async function readAhead(
  deps: SchedulerDeps,
  group: number,
  horizon: number,
  firstSweepFrom: number,
): Promise<AheadRead> {
  const from = (await deps.jobs.getAheadCursor(group)) ?? firstSweepFrom;
  const firstBucket = bucketOf(from);
  const lastBucket = Math.min(bucketOf(horizon - 1), firstBucket + MAX_AHEAD_CATCH_UP_BUCKETS);
  const through = lastBucket === bucketOf(horizon - 1) ? horizon : bucketStart(lastBucket + 1);
  const entries: AheadEntry[] = [];
  let readUnits = 0;
  for (let bucket = firstBucket; bucket <= lastBucket; bucket++) {
    let cursor: string | undefined;
    do {
      const page = await deps.jobs.queryAhead(aheadKeyOf(bucket, group), from, through, cursor);
      entries.push(...page.items);
      readUnits += page.readUnits;
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
  const stored =
    entries.length === 0 ? new Map<string, Job>() : await deps.jobs.getJobs(entries.map((e) => e.jobId));
  // In their firings' order (each query's is; the buckets are read in order): the cursor moves
  // up to what is sent.
  const jobs = entries.flatMap((entry) => {
    const job = stored.get(entry.jobId);
    return job && isFiledAhead(job) && job.madeAheadAt === entry.at
      ? [job as Job & { readonly madeAheadAt: number }]
      : [];
  });
  return {
    from,
    through,
    jobs,
    entriesRead: entries.length,
    readUnits,
    crossesHour: lastBucket > firstBucket,
  };
}

export interface AheadSent {
  readonly sent: number;
  readonly missed: number;
  readonly enqueueLateness: number[];
  /** A batch failed: the cursor stopped at its first firing, and the next sweep sends from there. */
  readonly failed: boolean;
}

/** One SQS batch. */
const SEND_BATCH = 10;
/** Batches sent at once (as the shards' firing does). */
const SEND_CONCURRENCY = 8;
/**
 * The cursor moves on after each this many runs sent, so a sweep stopped by its timeout in a
 * dense hour does not send them all again: a write for so many runs.
 */
const CURSOR_STEP = 1_000;

/**
 * Sends the runs of the one-offs read, in their firings' order, and moves the group's ahead cursor
 * up to what is sent: after each CURSOR_STEP runs, and to the range's end once all are, when it
 * sent or recorded anything (so the next sweep does not send it again) or the range reaches into
 * another hour (so a sweep reads at most two of its hours). A failed batch stops it at that
 * batch's first firing: the next sweep reads from there again, and a run sent twice is one run.
 */
export async function sendAheadOfGroup(
  deps: SchedulerDeps,
  group: number,
  ahead: AheadRead,
  leadOf: (dueAt: number) => number = () => DELIVERY_LEAD_SECONDS,
): Promise<AheadSent> {
  const totals = { sent: 0, missed: 0, enqueueLateness: [] as number[], failed: false };
  const steps = chunksOf(ahead.jobs, CURSOR_STEP);
  for (const [index, step] of steps.entries()) {
    let firstFailed: number | undefined;
    await forEachLimited(chunksOf(step, SEND_BATCH), SEND_CONCURRENCY, async (batch) => {
      try {
        const outcome = await sendAhead(deps, batch, leadOf);
        totals.sent += outcome.sent;
        totals.missed += outcome.missed;
        totals.enqueueLateness.push(...outcome.enqueueLateness);
      } catch (error) {
        const at = batch[0]?.madeAheadAt ?? ahead.from;
        firstFailed = Math.min(firstFailed ?? at, at);
        deps.log.error("sending one-offs made ahead failed; they are sent at the group's next sweep", {
          group,
          error,
        });
      }
    });
    const next = steps[index + 1]?.[0]?.madeAheadAt;
    try {
      if (firstFailed !== undefined) {
        if (firstFailed > ahead.from) await deps.jobs.advanceAheadCursor(group, firstFailed);
        return { ...totals, failed: true };
      }
      if (next !== undefined) await deps.jobs.advanceAheadCursor(group, next);
    } catch (error) {
      deps.log.error("moving the group's ahead cursor failed; its next sweep sends the runs again", {
        group,
        error,
      });
      return { ...totals, failed: true };
    }
  }
  try {
    if (ahead.jobs.length > 0 || ahead.crossesHour) await deps.jobs.advanceAheadCursor(group, ahead.through);
  } catch (error) {
    deps.log.error("moving the group's ahead cursor failed; its next sweep sends the runs again", {
      group,
      error,
    });
    return { ...totals, failed: true };
  }
  return totals;
}

/**
 * Sends the runs of one batch of one-offs read (made at create: their messages carry them,
 * decision 0051), each with the lead of its second (`leadOf`), its delay counted from the clock
 * as it is at the send. A paused job's is sent too: its lease records the firing missed in the
 * pause, as for any made run, and its resume looks at it. A firing already late for its
 * missed-run policy (the sweep was down) is recorded missed, the job's end as the due index's
 * way records it, without writing the job (decision 0057). Safe to repeat: a run sent twice is
 * one run (the lease step writes it once).
 */
async function sendAhead(
  deps: SchedulerDeps,
  jobs: ReadonlyArray<Job & { readonly madeAheadAt: number }>,
  leadOf: (dueAt: number) => number,
): Promise<Omit<AheadSent, "failed">> {
  const now = deps.clock.now();
  const graceMs = deps.settings.repairGraceSeconds * 1000;
  const toSend: Array<{ job: Job; at: number }> = [];
  let missed = 0;
  await Promise.all(
    jobs.map(async (job) => {
      const at = job.madeAheadAt;
      const plan = planRuns(job.schedule, missedRunOptionsOf(job, deps.settings), at - 1, now, at + 1);
      const [firing] = plan.missed;
      if (job.status !== JobStatus.Active || firing === undefined || plan.create.length > 0) {
        toSend.push({ job, at });
        return;
      }
      const record = missedRun(job, firing, now, { final: true, checkAt: now + graceMs });
      missed += 1;
      if ((await deps.runs.createRun(record)) === "created") await endJobAfter(deps, record, record, now);
    }),
  );
  if (toSend.length > 0) {
    // Written as well during an upgrade from code that cannot read a made run's message.
    if (deps.settings.writeRunsWhenMade === 1)
      await Promise.all(toSend.map(({ job, at }) => deps.runs.createRun(scheduledRun(job, at, now, true))));
    await deps.queue.send(
      toSend.map(({ job, at }) => ({
        message: madeRunMessageOf(
          scheduledRun(job, at, now, true),
          // A keyed job's run carries the stored request's tag (decision 0052): it is this job's.
          job.idempotencyKey === undefined ? undefined : requestTagOf(job),
        ),
        delaySeconds: delaySecondsUntil(
          at,
          now,
          leadOf(at) - DELIVERY_LEAD_SECONDS + baseLeadSecondsOf(job.type),
        ),
      })),
    );
  }
  return { sent: toSend.length, missed, enqueueLateness: toSend.map(({ at }) => Math.max(0, now - at)) };
}

/**
 * How far the group of each job filed ahead has sent (its ahead cursor), for the views: a job's
 * firing its cursor has not passed is shown as its next run (nextRunViewed). One read a group.
 */
export async function aheadSentThroughOf(
  deps: Pick<SchedulerDeps, "jobs">,
  jobs: ReadonlyArray<Parameters<typeof isFiledAhead>[0] & { readonly jobId: string }>,
): Promise<(jobId: string) => number | undefined> {
  const groups = [...new Set(jobs.filter(isFiledAhead).map((job) => groupOf(job.jobId)))];
  const cursors = new Map(
    await Promise.all(groups.map(async (group) => [group, await deps.jobs.getAheadCursor(group)] as const)),
  );
  return (jobId) => cursors.get(groupOf(jobId));
}
