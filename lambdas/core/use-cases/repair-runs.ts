import { delaySecondsAfter, delaySecondsUntil, runMessageOf } from "../delivery";
import type { SchedulerDeps } from "../deps";
import { allRepairKeys } from "../keys";
import type { RepairCandidate } from "../ports";
import { availableAt, RunStatus } from "../run";

/** Candidates read per repair partition and page. */
const PAGE = 100;

export interface RepairStats {
  readonly inspected: number;
  readonly resent: number;
  readonly rescheduled: number;
}

/**
 * Re-delivers runs whose message was lost or never sent. DynamoDB is the source of truth:
 * every unfinished run sits in the repair index under the time by which something should have
 * happened to it. When that time passes and the run is still pending, or its lease lapsed
 * and nobody leased it again, its message is presumed lost and sent again. A copy that turns
 * out not to be lost is dropped by the lease step, so a resend never runs a run twice at once.
 *
 * `queueWasReset` is for a queue known to have lost everything (the local SQS emulator keeps
 * nothing across restarts): every unfinished run is re-sent at once, due when it was due.
 */
export async function repairRuns(
  deps: SchedulerDeps,
  options: { readonly queueWasReset?: boolean } = {},
): Promise<RepairStats> {
  const now = deps.clock.now();
  const before = options.queueWasReset ? Number.MAX_SAFE_INTEGER : now;
  const stats = { inspected: 0, resent: 0, rescheduled: 0 };
  for (const repairKey of allRepairKeys()) {
    // A resent run moves to a later check time and may show up again further down the pages.
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await deps.runs.queryRepairCandidates(repairKey, before, PAGE, cursor);
      for (const candidate of page.items) {
        if (seen.has(candidate.runId)) continue;
        seen.add(candidate.runId);
        stats.inspected += 1;
        const action = await repairOne(deps, candidate, now, options.queueWasReset === true);
        if (action !== "skipped") stats[action] += 1;
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
  if (stats.resent > 0) deps.log.info("repair re-sent runs", { ...stats });
  return stats;
}

async function repairOne(
  deps: SchedulerDeps,
  run: RepairCandidate,
  now: number,
  queueWasReset: boolean,
): Promise<"resent" | "rescheduled" | "skipped"> {
  const graceMs = deps.settings.repairGraceSeconds * 1000;
  const leaseEnd = run.leaseExpiresAt ?? Number.NEGATIVE_INFINITY;
  const leaseLive = run.status === RunStatus.Leased && leaseEnd > now;

  if (leaseLive && !queueWasReset) {
    // Heartbeats extend the lease without touching checkAt; look again after this lease.
    return (await deps.runs.rescheduleCheck(run, run.checkAt, leaseEnd + graceMs))
      ? "rescheduled"
      : "skipped";
  }
  if (run.status !== RunStatus.Pending && run.status !== RunStatus.Leased) return "skipped";

  // Claim the repair first: of two concurrent repair passes only one resends.
  const visibleAt = leaseLive ? leaseEnd : availableAt(run);
  if (!(await deps.runs.rescheduleCheck(run, run.checkAt, Math.max(now, visibleAt) + graceMs))) {
    return "skipped";
  }
  // A held run's copy must not show up before the lease ends (the lease step would drop it).
  const delaySeconds = leaseLive ? delaySecondsAfter(leaseEnd, now) : delaySecondsUntil(visibleAt, now);
  await deps.queue.send([{ message: runMessageOf(run), delaySeconds }]);
  return "resent";
}
