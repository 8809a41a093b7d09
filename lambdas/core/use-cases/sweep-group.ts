import { FUNCTION_TIMEOUT_SECONDS } from "../../definitions/functions";
import { blockFirings } from "../advance-block";
import { leadSecondsFor } from "../delivery";
import type { SchedulerDeps } from "../deps";
import type { DueJob } from "../job";
import { JobStatus } from "../job";
import { bucketOf, dueKeyOf, SWEEP_GROUP_COUNT, shardsOfGroup } from "../keys";
import { chunksOf, forEachLimited } from "../limited";
import type { AheadSlice } from "../ports";
import { recordCancelledFirings } from "./cancelled-firings";
import { fireJobs } from "./fire-jobs";
import { MAX_AHEAD_ENTRIES_A_SWEEP, readAhead, sendAheadOfGroup } from "./sweep-ahead";

/**
 * A sweep's cursor never passes the bucket of "now minus this margin". Writers file a job
 * under the bucket of max(next run, their own now): the API function (creates, updates, pauses
 * and resumes) and the sweeper (a job's advance). A write lands at most its function's timeout
 * after the `now` it was filed by (29 s and 60 s), and shows in the due index (eventually
 * consistent) normally within a second of landing. The margin is the longer timeout and a
 * minute more for that, clock skew and a last retry: 2 minutes, from 5 (decision 0054). Each
 * minute of it after an hour's turn is a tick whose sweep queries every shard of two buckets.
 */
export const CURSOR_SAFETY_MS =
  (Math.max(FUNCTION_TIMEOUT_SECONDS.api, FUNCTION_TIMEOUT_SECONDS.sweeper) + 60) * 1_000;
/** How many old buckets one sweep catches up on after an outage, besides the current ones. */
export const MAX_CATCH_UP_BUCKETS = 48;
/** Shards of a group queried at once. */
const SHARD_CONCURRENCY = 8;
/** One SQS batch. */
const FIRE_BATCH = 10;

/** How much of its slice of one-offs made ahead one sweep takes on. */
export interface AheadOptions {
  /** The most entries it reads (MAX_AHEAD_ENTRIES_A_SWEEP). */
  readonly limit?: number | undefined;
  /**
   * The clock's instant after which it starts no more batches (its function's time running
   * out): the rest goes out with the group's next slice, by a rewind, so a dense slice never
   * times its sweep out again and again.
   */
  readonly sendUntil?: number | undefined;
}

export interface SweepStats {
  readonly group: number;
  readonly bucketsRead: number;
  readonly jobsRead: number;
  readonly runsCreated: number;
  readonly duplicatesAvoided: number;
  readonly missedRecorded: number;
  readonly deferred: number;
  readonly enqueueLatenessMs: number[];
  readonly failedShards: number;
  /** DynamoDB read capacity the due-index queries consumed. */
  readonly readUnits: number;
}

/**
 * Sweeps one group of shards: reads the jobs due before now + lookahead from every bucket
 * between the group's cursor and the horizon, fires them, then moves the cursor past the
 * buckets that are now empty of due work. A cancelled job found there is one whose cancel died
 * before it recorded the job's overdue firings: they are recorded now. Beside them, it sends the
 * one-offs made ahead in `aheadSlice`, the slice its tick handed out (decision 0059); a message
 * without one (from a tick before it) sends none, and the ledger it never moved hands them out.
 */
export async function sweepGroup(
  deps: SchedulerDeps,
  group: number,
  aheadSlice?: AheadSlice | undefined,
  options: AheadOptions = {},
): Promise<SweepStats> {
  const now = deps.clock.now();
  const horizon = now + deps.settings.lookaheadSeconds * 1000;
  const settled = bucketOf(now - CURSOR_SAFETY_MS);
  // A group never swept before (a new table) also reads the hour before, so jobs accepted in
  // the minutes before the first tick cannot fall behind its cursor.
  const cursor = (await deps.jobs.getSweepCursor(group)) ?? settled - 1;
  const buckets = bucketsToRead(cursor, settled, bucketOf(horizon));

  const stats = {
    jobsRead: 0,
    runsCreated: 0,
    duplicatesAvoided: 0,
    missedRecorded: 0,
    deferred: 0,
    failedShards: 0,
    readUnits: 0,
  };
  const lateness: number[] = [];
  let firstUnfinished = Number.POSITIVE_INFINITY;

  // Read every shard first, then fire: the jobs due in each second across the group tell how
  // dense that second is, and a dense second's runs are sent with a longer lead (decision 0014).
  const work = buckets.flatMap((bucket) => shardsOfGroup(group).map((shard) => ({ bucket, shard })));
  const read: Array<{ bucket: number; jobs: DueJob[]; cancelled: DueJob[] }> = [];
  // The group's one-offs made ahead at create (decision 0058) in the slice its tick handed out
  // (decision 0059), beside its shards. A failure rewinds the group's ledger entry: its next
  // tick hands those firings out again.
  let aheadRewindTo: number | undefined;
  const readingAhead = aheadSlice
    ? readAhead(deps, group, aheadSlice, options.limit ?? MAX_AHEAD_ENTRIES_A_SWEEP).catch(
        (error: unknown) => {
          aheadRewindTo = aheadSlice.from;
          deps.log.error("reading a group's one-offs made ahead failed; its next tick hands them out again", {
            group,
            error,
          });
          return undefined;
        },
      )
    : Promise.resolve(undefined);
  await forEachLimited(work, SHARD_CONCURRENCY, async ({ bucket, shard }) => {
    try {
      const outcome = await readShard(deps, dueKeyOf(bucket, shard), horizon);
      stats.jobsRead += outcome.jobsRead;
      stats.readUnits += outcome.readUnits;
      read.push({ bucket, jobs: outcome.active, cancelled: outcome.cancelled });
    } catch (error) {
      stats.failedShards += 1;
      firstUnfinished = Math.min(firstUnfinished, bucket);
      deps.log.error("sweep of a shard failed; it is retried at its group's next sweep", {
        group,
        bucket,
        shard,
        error,
      });
    }
  });
  const ahead = await readingAhead;
  // A slice denser than one sweep reads: the rest goes out with the next (a rewind to it).
  if (ahead?.restFrom !== undefined) aheadRewindTo = ahead.restFrom;
  if (ahead) {
    stats.jobsRead += ahead.entriesRead;
    stats.readUnits += ahead.readUnits;
  }
  // Every firing a sweep makes counts, a block's too (decision 0044): every-minute jobs due at
  // the same second make their next ten minutes' dense seconds in this one sweep.
  const leadOf = densityLeads(
    [
      ...read.flatMap((r) => r.jobs),
      ...(ahead?.jobs ?? []).map((job) => ({ ...job, nextRunAt: job.madeAheadAt })),
    ],
    SWEEP_GROUP_COUNT,
    deps.settings.leasesPerSecond,
    (job) => blockFirings(job, now, horizon, deps.settings.advanceBlockSeconds),
  );
  // The one-offs made ahead are sent beside the shards' firing, not after it: each waits on
  // its own lead alone.
  const sendingAhead = ahead
    ? sendAheadOfGroup(deps, group, ahead, leadOf, options.sendUntil).then(
        (outcome) => {
          stats.runsCreated += outcome.sent;
          stats.missedRecorded += outcome.missed;
          if (outcome.unsentFrom !== undefined)
            aheadRewindTo = Math.min(aheadRewindTo ?? outcome.unsentFrom, outcome.unsentFrom);
          lateness.push(...outcome.enqueueLateness);
        },
        () => {
          aheadRewindTo = ahead.slice.from;
        },
      )
    : Promise.resolve();
  await forEachLimited(read, SHARD_CONCURRENCY, async ({ bucket, jobs, cancelled }) => {
    try {
      await Promise.all(cancelled.map((job) => closeCancelled(deps, job.jobId, now)));
      const outcome = await fireShard(deps, jobs, horizon, leadOf);
      stats.runsCreated += outcome.created;
      stats.duplicatesAvoided += outcome.duplicates;
      stats.missedRecorded += outcome.missed;
      stats.deferred += outcome.deferred;
      lateness.push(...outcome.enqueueLateness);
      if (outcome.deferred > 0) firstUnfinished = Math.min(firstUnfinished, bucket);
    } catch (error) {
      stats.failedShards += 1;
      firstUnfinished = Math.min(firstUnfinished, bucket);
      deps.log.error("firing a shard's jobs failed; they are retried at their group's next sweep", {
        group,
        bucket,
        error,
      });
    }
  });

  await sendingAhead;
  if (aheadRewindTo !== undefined) {
    // A failed rewind fails the message (as failed shards do): SQS then hands the whole slice out again.
    await deps.jobs.rewindAheadLedger(group, aheadRewindTo).catch((error: unknown) => {
      stats.failedShards += 1;
      deps.log.error("rewinding a group's ahead ledger failed; SQS retries its sweep", { group, error });
    });
  }

  const caughtUpTo = Math.min(cursor + MAX_CATCH_UP_BUCKETS, settled);
  const nextCursor = Math.min(caughtUpTo, firstUnfinished);
  if (nextCursor > cursor) await deps.jobs.advanceSweepCursor(group, nextCursor);

  return { group, bucketsRead: buckets.length, enqueueLatenessMs: lateness, ...stats };
}

/** Old buckets from the cursor (at most MAX_CATCH_UP_BUCKETS), then "settled" to the horizon. */
export function bucketsToRead(cursor: number, settled: number, last: number): number[] {
  const buckets: number[] = [];
  for (let b = cursor; b < Math.min(settled, cursor + MAX_CATCH_UP_BUCKETS); b++) buckets.push(b);
  for (let b = settled; b <= last; b++) buckets.push(b);
  return buckets;
}

/**
 * The lead of each due second, from the jobs one group read: shards spread jobs evenly by a hash
 * of their id, so a group's count of a second times the number of groups estimates the whole
 * table's (a group of 32 shards sees ~3% of a spike: a 10,000-run second is ~310 of its jobs).
 */
export function densityLeads(
  jobs: readonly DueJob[],
  groups: number,
  leasesPerSecond: number,
  firingsOf: (job: DueJob) => Iterable<number> = (job) => [job.nextRunAt],
): (dueAt: number) => number {
  const perSecond = new Map<number, number>();
  for (const job of jobs) {
    for (const at of firingsOf(job)) {
      const second = Math.floor(at / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
  }
  return (dueAt) => leadSecondsFor((perSecond.get(Math.floor(dueAt / 1000)) ?? 0) * groups, leasesPerSecond);
}

async function readShard(deps: SchedulerDeps, dueKey: string, horizon: number) {
  const totals = { jobsRead: 0, readUnits: 0, active: [] as DueJob[], cancelled: [] as DueJob[] };
  let cursor: string | undefined;
  do {
    const page = await deps.jobs.queryDue(dueKey, horizon, cursor);
    totals.jobsRead += page.items.length;
    totals.readUnits += page.readUnits;
    // The index lags its table a little: a job paused or completed meanwhile may still show up.
    totals.active.push(...page.items.filter((job) => job.status === JobStatus.Active));
    totals.cancelled.push(...page.items.filter((job) => job.status === JobStatus.Cancelled));
    cursor = page.cursor;
  } while (cursor !== undefined);
  return totals;
}

/** A cancel that died before it recorded its job's overdue firings: done here (read in full). */
async function closeCancelled(deps: SchedulerDeps, jobId: string, now: number): Promise<void> {
  const job = await deps.jobs.getJob(jobId);
  if (job) await recordCancelledFirings(deps, job, now);
}

async function fireShard(
  deps: SchedulerDeps,
  jobs: readonly DueJob[],
  horizon: number,
  leadOf: (dueAt: number) => number,
) {
  const totals = { created: 0, duplicates: 0, missed: 0, deferred: 0, enqueueLateness: [] as number[] };
  for (const batch of chunksOf(jobs, FIRE_BATCH)) {
    const fired = await fireJobs(deps, batch, horizon, leadOf);
    totals.created += fired.created;
    totals.duplicates += fired.duplicates;
    totals.missed += fired.missed;
    totals.deferred += fired.deferred;
    totals.enqueueLateness.push(...fired.enqueueLateness);
  }
  return totals;
}
