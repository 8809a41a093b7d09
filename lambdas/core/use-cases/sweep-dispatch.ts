import type { SchedulerDeps } from "../deps";
import { bucketOf, bucketStart } from "../keys";
import type { AheadLedger, AheadLedgerEntry, AheadSlice, SweepMessage } from "../ports";
import { fromOf } from "./sweep-ahead";
import { CURSOR_SAFETY_MS } from "./sweep-group";

/** How many hours of a group's ahead partitions one slice catches up on after an outage. */
export const MAX_AHEAD_CATCH_UP_BUCKETS = 48;

/**
 * A tick's fan-out (decision 0059): one sweep message a group, each carrying the slice of the
 * group's one-offs made ahead that its sweep sends, from where the ahead ledger says the group's
 * last slice ended (or was rewound to) up to the tick's horizon. The messages go first and the
 * ledger is moved after, in one write for all the groups: a tick that dies between the two (or
 * whose write meets a rewind) leaves the ledger where it was, and the next tick hands the same
 * firings out again; a run sent twice is one run. A tick that never comes moves nothing either:
 * the next one's slices start where the last recorded one ended. So the sweeps write nothing
 * when they send, and a failed sweep rewinds its group (rewindAheadLedger).
 */
export async function dispatchSweeps(
  deps: SchedulerDeps,
  groups: readonly number[],
  now: number,
): Promise<void> {
  const ledger = await deps.jobs.getAheadLedger().catch((error: unknown) => {
    // The due jobs' sweeps go out still: their messages carry no slice, and the ledger the tick
    // did not move hands those firings out next tick.
    deps.log.error("reading the ahead ledger failed; this tick hands out no one-offs made ahead", { error });
    return undefined;
  });
  if (!ledger) {
    await deps.sweeps.dispatch(groups.map((group) => ({ group, tickAt: now })));
    return;
  }
  const horizon = now + deps.settings.lookaheadSeconds * 1000;
  // A group the ledger has never recorded starts at decision 0058's cursor (code before this
  // one moved it), or an hour back as the due cursor does.
  const firstFrom = bucketStart(bucketOf(now - CURSOR_SAFETY_MS) - 1);
  const messages: SweepMessage[] = await Promise.all(
    groups.map(async (group) => {
      const read = ledger.get(group);
      const from = read ? fromOf(read) : await upgradeCursorOf(deps, group, firstFrom);
      // An old cursor that cannot be read: this group's sweep goes out without a slice, and
      // its next tick tries again (its ledger entry is not written).
      if (from === undefined) return { group, tickAt: now };
      return { group, tickAt: now, ahead: aheadSliceOf(from, horizon) };
    }),
  );
  await deps.sweeps.dispatch(messages);
  // Not recorded, the slices go out again next tick: a failure here must not keep the tick from
  // its repair pass.
  await recordSlices(deps, ledger, messages).catch((error: unknown) => {
    deps.log.error("recording the ahead ledger failed; the next tick hands the same firings out again", {
      error,
    });
  });
}

/** Decision 0058's cursor of a group the ledger has not recorded; undefined if it cannot be read. */
async function upgradeCursorOf(deps: SchedulerDeps, group: number, firstFrom: number) {
  try {
    return (await deps.jobs.getAheadCursor(group)) ?? firstFrom;
  } catch (error) {
    deps.log.error(
      "reading a group's old ahead cursor failed; its one-offs made ahead wait for the next tick",
      {
        group,
        error,
      },
    );
    return undefined;
  }
}

/**
 * The slice from `from` to the horizon, or a shorter one after an outage: at most
 * MAX_AHEAD_CATCH_UP_BUCKETS hours beyond the hour of `from`, so one sweep reads a bounded number
 * of partitions and the next slices catch up on the rest. Empty when `from` is past the horizon.
 */
export function aheadSliceOf(from: number, horizon: number): AheadSlice {
  const lastBucket = Math.min(bucketOf(horizon - 1), bucketOf(from) + MAX_AHEAD_CATCH_UP_BUCKETS);
  const to = lastBucket === bucketOf(horizon - 1) ? horizon : bucketStart(lastBucket + 1);
  return { from, to: Math.max(from, to) };
}

/**
 * Moves the ledger to the slices' ends. When the write meets an entry changed since it was read
 * (a sweep rewound it, or another tick moved it), it is read again and tried once more with the
 * groups still as read; if that fails too, each group is written alone, so one entry that never
 * matches (changed again, or malformed) holds back only its own group. A group not written keeps
 * its entry, and its next tick hands its slice out again from there.
 */
async function recordSlices(deps: SchedulerDeps, ledger: AheadLedger, messages: readonly SweepMessage[]) {
  const movesOf = (read: AheadLedger) =>
    messages.flatMap(({ group, ahead }) => {
      const entry = read.get(group);
      const unchanged = sameEntry(entry, ledger.get(group));
      return ahead && ahead.to > ahead.from && unchanged ? [{ group, read: entry, through: ahead.to }] : [];
    });
  const first = movesOf(ledger);
  if (first.length === 0 || (await deps.jobs.moveAheadLedger(first))) return;
  const again = movesOf(await deps.jobs.getAheadLedger());
  if (again.length === 0 || (await deps.jobs.moveAheadLedger(again))) return;
  const alone = await Promise.all(
    again.map(async (move) => [move.group, await deps.jobs.moveAheadLedger([move])] as const),
  );
  const held = alone.filter(([, moved]) => !moved).map(([group]) => group);
  if (held.length > 0)
    deps.log.error(
      "the ahead ledger changed under a tick's write; these groups' slices go out again next tick",
      {
        groups: held,
      },
    );
}

function sameEntry(a: AheadLedgerEntry | undefined, b: AheadLedgerEntry | undefined): boolean {
  return a?.through === b?.through && a?.rewoundTo === b?.rewoundTo && a?.rewinds === b?.rewinds;
}
