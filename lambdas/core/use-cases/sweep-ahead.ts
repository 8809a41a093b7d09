import {
  baseLeadSecondsOf,
  DELIVERY_LEAD_SECONDS,
  delaySecondsUntil,
  madeRunMessageOf,
  requestTagOf,
} from "../delivery";
import type { SchedulerDeps } from "../deps";
import { isFiledAhead, type Job, JobStatus } from "../job";
import { aheadKeyOf, bucketOf, groupOf } from "../keys";
import { missedRun, scheduledRun } from "../lifecycle/creation";
import { chunksOf, forEachLimited } from "../limited";
import { missedRunOptionsOf, planRuns } from "../missed-runs";
import type { AheadEntry, AheadLedgerEntry, AheadSlice } from "../ports";
import { endJobAfter } from "./end-job";

/**
 * The most entries one sweep reads from its slice: more than a group's share of a million-run
 * second (31,250), and few enough to send well within the sweeper's timeout. A denser slice (an
 * outage's catch-up) is sent in parts: the rest goes out with the group's next slice.
 */
export const MAX_AHEAD_ENTRIES_A_SWEEP = 40_000;

/** What one group's sweep found in the due index's ahead partitions (decisions 0058, 0059). */
export interface AheadRead {
  /** The slice read, as its tick handed it out. */
  readonly slice: AheadSlice;
  /** The jobs still made ahead at their entry's firing, read from the table (not the index). */
  readonly jobs: ReadonlyArray<Job & { readonly madeAheadAt: number }>;
  readonly entriesRead: number;
  readonly readUnits: number;
  /** Where the entries left for the next slice begin, when the slice held more than one sweep reads. */
  readonly restFrom?: number | undefined;
}

/**
 * Reads a group's one-offs made ahead whose firing is in the slice its tick handed out, up to
 * MAX_AHEAD_ENTRIES_A_SWEEP of them. A create files one at least the lookahead and the cursor
 * margin ahead of its own clock (MADE_AHEAD_BEYOND_MS), so no entry lands in a slice a tick has
 * handed out: the ahead ledger is the whole bookkeeping, and a sent one-off's job is never
 * written. Entries the index shows but whose job has moved (a schedule change superseded the
 * run, a cancel) are read in the table and left.
 */
export async function readAhead(
  deps: SchedulerDeps,
  group: number,
  slice: AheadSlice,
  limit = MAX_AHEAD_ENTRIES_A_SWEEP,
): Promise<AheadRead> {
  const read = await readEntries(deps, group, slice, limit);
  let readUnits = read.readUnits;
  let entriesRead = read.entries.length;
  // The rest start at a whole firing: entries of that instant already read are left to the
  // next slice too, so none is sent twice.
  const next = read.entries[limit];
  let taken = next ? read.entries.slice(0, limit).filter((e) => e.at < next.at) : read.entries;
  let restFrom = next?.at;
  if (next && taken.length === 0) {
    // One instant holds more than a sweep reads: that instant whole, or it would never pass.
    const instant = await readEntries(
      deps,
      group,
      { from: next.at, to: next.at + 1 },
      Number.POSITIVE_INFINITY,
    );
    taken = instant.entries;
    readUnits += instant.readUnits;
    entriesRead += instant.entries.length;
    restFrom = next.at + 1 < slice.to ? next.at + 1 : undefined;
  }
  const stored =
    taken.length === 0 ? new Map<string, Job>() : await deps.jobs.getJobs(taken.map((e) => e.jobId));
  // In their firings' order (each query's is; the buckets are read in order): a failed send
  // rewinds the group to the earliest firing of a batch that failed.
  const jobs = taken.flatMap((entry) => {
    const job = stored.get(entry.jobId);
    return job && isFiledAhead(job) && job.madeAheadAt === entry.at
      ? [job as Job & { readonly madeAheadAt: number }]
      : [];
  });
  return { slice, jobs, entriesRead, readUnits, restFrom };
}

/** The slice's entries in their firings' order, one past `limit` at most (to see where the rest begins). */
async function readEntries(deps: SchedulerDeps, group: number, slice: AheadSlice, limit: number) {
  const entries: AheadEntry[] = [];
  let readUnits = 0;
  if (slice.to <= slice.from) return { entries, readUnits };
  for (
    let bucket = bucketOf(slice.from);
    bucket <= bucketOf(slice.to - 1) && entries.length <= limit;
    bucket++
  ) {
    let cursor: string | undefined;
    do {
      const page = await deps.jobs.queryAhead(aheadKeyOf(bucket, group), slice.from, slice.to, cursor);
      entries.push(...page.items);
      readUnits += page.readUnits;
      cursor = page.cursor;
    } while (cursor !== undefined && entries.length <= limit);
  }
  return { entries, readUnits };
}

export interface AheadSent {
  readonly sent: number;
  readonly missed: number;
  readonly enqueueLateness: number[];
  /**
   * The earliest firing of a batch that failed or was not started (its sweep's time ran out):
   * the group's next tick hands it out again from there.
   */
  readonly unsentFrom?: number | undefined;
}

/** One SQS batch. */
const SEND_BATCH = 10;
/** Batches sent at once (as the shards' firing does). */
const SEND_CONCURRENCY = 8;

/**
 * Sends the runs of the one-offs read, in batches, beside the shards' firing. Nothing is written
 * when all go: the tick recorded the slice as handed out. A batch that fails, or that would
 * start after `sendUntil`, is reported by its first firing (unsentFrom), which the sweep rewinds
 * its group's ledger entry to; the batches after it that went are sent again with the next
 * slice, and a run sent twice is one run.
 */
export async function sendAheadOfGroup(
  deps: SchedulerDeps,
  group: number,
  ahead: AheadRead,
  leadOf: (dueAt: number) => number = () => DELIVERY_LEAD_SECONDS,
  sendUntil = Number.POSITIVE_INFINITY,
): Promise<AheadSent> {
  const totals = { sent: 0, missed: 0, enqueueLateness: [] as number[] };
  let unsentFrom: number | undefined;
  const unsent = (batch: ReadonlyArray<{ readonly madeAheadAt: number }>) => {
    const at = batch[0]?.madeAheadAt ?? ahead.slice.from;
    unsentFrom = Math.min(unsentFrom ?? at, at);
  };
  await forEachLimited(chunksOf(ahead.jobs, SEND_BATCH), SEND_CONCURRENCY, async (batch) => {
    if (deps.clock.now() > sendUntil) return unsent(batch);
    try {
      const outcome = await sendAhead(deps, batch, leadOf);
      totals.sent += outcome.sent;
      totals.missed += outcome.missed;
      totals.enqueueLateness.push(...outcome.enqueueLateness);
    } catch (error) {
      unsent(batch);
      deps.log.error("sending one-offs made ahead failed; they go out again with the group's next slice", {
        group,
        error,
      });
    }
  });
  if (deps.clock.now() > sendUntil && unsentFrom !== undefined)
    deps.log.warn(
      "a sweep's time ran out in a dense slice of one-offs made ahead; the rest go with the next",
      {
        group,
        from: unsentFrom,
      },
    );
  return { ...totals, unsentFrom };
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
): Promise<Omit<AheadSent, "unsentFrom">> {
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
 * How far the group of each job filed ahead has handed its slices out (the ahead ledger, decision
 * 0059; a group never recorded there, decision 0058's cursor), for the views: a job's firing not
 * yet handed out is shown as its next run (nextRunViewed). One read of the ledger, and one a
 * group it has never recorded.
 */
export async function aheadSentThroughOf(
  deps: Pick<SchedulerDeps, "jobs">,
  jobs: ReadonlyArray<Parameters<typeof isFiledAhead>[0] & { readonly jobId: string }>,
): Promise<(jobId: string) => number | undefined> {
  const groups = [...new Set(jobs.filter(isFiledAhead).map((job) => groupOf(job.jobId)))];
  if (groups.length === 0) return () => undefined;
  const ledger = await deps.jobs.getAheadLedger();
  const cursors = new Map(
    await Promise.all(
      groups.map(async (group) => {
        const entry = ledger.get(group);
        return [group, entry ? fromOf(entry) : await deps.jobs.getAheadCursor(group)] as const;
      }),
    ),
  );
  return (jobId) => cursors.get(groupOf(jobId));
}

/** Where a group's next slice starts: its last slice's end, or earlier where a sweep failed. */
export function fromOf(entry: AheadLedgerEntry): number {
  return Math.min(entry.through, entry.rewoundTo ?? entry.through);
}
