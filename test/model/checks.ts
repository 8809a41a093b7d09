import { isFiledAhead, type Job, JobStatus } from "../../lambdas/core/job";
import { groupOf } from "../../lambdas/core/keys";
import { neverStartsAgain } from "../../lambdas/core/lifecycle/overlap-decision";
import { runsKeptSince } from "../../lambdas/core/made-runs";
import { shownJob } from "../../lambdas/core/one-off-end";
import { type Run, RunStatus } from "../../lambdas/core/run";
import { firingsAfter } from "../../lambdas/core/schedule/schedule";
import { SUPERSEDED_REASON } from "../../lambdas/core/use-cases/runs-ahead";
import { fromOf } from "../../lambdas/core/use-cases/sweep-ahead";
import { isUnfinished, type World } from "./world";

/** Whether `at` is one of the job's own firings under its schedule (its jitter included). */
function isFiringOf(job: Pick<Job, "schedule">, at: number): boolean {
  const first = firingsAfter(job.schedule, at - 1).next();
  return !first.done && first.value.at === at;
}

/**
 * The properties the model checks after every step (issue 27, (a)-(f); (g), (h) since). Those about a lease
 * being granted are checked by the lease command itself (grantChecks), with the state read
 * before it; the rest read the stores as they are.
 */
export async function checkState(world: World): Promise<void> {
  const now = world.clock.now();
  for (const modelJob of world.jobs) {
    const stored = await world.storedJob(modelJob.jobId);
    if (!stored) continue; // the create crashed before its write: no job, nothing promised
    const runs = await world.runsOf(stored.jobId);
    // Judged as shown: a one-off its run ended is completed, unwritten (decision 0057).
    const job = shownJob(
      stored,
      runs.find((r) => r.scheduledFor === stored.lastFiringAt),
      runsKeptSince(world.deps.settings, now),
    );
    // (h) A run made by a create that did not store the job (a keyed create retried with
    // another body: decision 0052) is never written, so never run, as the job's. Unless that
    // instant is one of the job's own firings: the two bodies' runs then share a run key (a
    // one-off moved by 2 s whose jitter moved it back), and the job's own run there is written
    // by its own steps (its create's fire recording it missed, say), which is no violation.
    for (const [key] of world.queue.madeBy) {
      const at = Number(key.slice(key.lastIndexOf("@") + 1));
      if (!key.startsWith(`${job.jobId}@`) || world.madeByJob(job, at) || isFiringOf(job, at)) continue;
      const written = (await world.stores.runsOf(job.jobId)).find((r) => r.scheduledFor === at);
      if (written && written.origin === undefined)
        world.fail(
          `(h) ${world.describeRun(written)} was made by another request than its job's, and written`,
        );
    }
    // (a) An active job has something that will run or end it: a next firing for the sweep,
    // an unfinished run the repair index watches (or a message carries), or a finished last run
    // still in the repair index, whose check ends the job, or whose message is still queued
    // (decision 0045: its lease step ends the job).
    if (job.status === JobStatus.Active && job.nextRunAt === undefined) {
      // A run marked last counts only if it is the job's last firing (decision 0046).
      const lastOfJob = (r: Run) =>
        r.final && (job.lastFiringAt === undefined || r.scheduledFor === job.lastFiringAt);
      const driven = runs.some(
        (r) =>
          (isUnfinished(r) || lastOfJob(r)) &&
          (r.checkAt !== undefined || world.queue.carries(r.jobId, r.scheduledFor)),
      );
      // A one-off made ahead at create (decision 0058) is sent by the sweep of the slice that
      // holds its firing: one a tick will hand out (its group's ledger has not passed it), or
      // one a sweep message waiting in the queue carries (decision 0059).
      const group = groupOf(job.jobId);
      const entry = (await world.stores.jobs.getAheadLedger()).get(group);
      const handedOutTo = entry ? fromOf(entry) : await world.stores.jobs.getAheadCursor(group);
      const at = job.madeAheadAt;
      const filedAhead =
        isFiledAhead(job) &&
        at !== undefined &&
        (handedOutTo === undefined ||
          at >= handedOutTo ||
          world.sweeps.pending.some(
            (m) => m.group === group && m.ahead && m.ahead.from <= at && at < m.ahead.to,
          ));
      if (!driven && !filedAhead)
        world.fail(
          `(a) active job ${job.jobId} has no next run and nothing that will run or end it: ${runs.map((r) => world.describeRun(r)).join("; ")}`,
        );
    }
    // (g) A job ends with its last run: when it completes, its last run is finished. That is
    // the run of the firing its last advance recorded (lastFiringAt, decision 0046), else its
    // latest run marked last: a schedule change can leave an earlier run marked last, and it
    // must not end the job. A run at lastFiringAt not marked last is a firing's run made ahead
    // whose missed record could not be written (a backlog's summary): the record ended the job.
    // Judged at the step that completed it: a later replay may run that run again.
    if (job.status === JobStatus.Completed && !modelJob.completed) {
      modelJob.completed = true;
      const atLast = runs.find((r) => r.scheduledFor === job.lastFiringAt);
      if (job.lastFiringAt !== undefined && !atLast)
        world.fail(`(g) job ${job.jobId} completed with no run at its last firing ${job.lastFiringAt}`);
      const last =
        job.lastFiringAt === undefined
          ? runs
              .filter((r) => r.final && r.status !== RunStatus.Cancelled)
              .reduce<Run | undefined>(
                (latest, r) => (latest && latest.scheduledFor > r.scheduledFor ? latest : r),
                undefined,
              )
          : atLast?.final
            ? atLast
            : undefined;
      if (last && isUnfinished(last))
        world.fail(
          `(g) job ${job.jobId} completed before its last run finished: ${world.describeRun(last)} (runs: ${runs.map((r) => `${world.describeRun(r)}${r.final ? " final" : ""}`).join("; ")})`,
        );
    }
    // (c) Under skip, buffer-one and cancel-previous, at most one run leased since the job has
    // had that policy holds a live lease a worker was handed; backfilled runs run beside the
    // others by design. A lease written by a step that failed before it answered (a refused or
    // killed call after it) reached no worker: nothing runs under it, and it lapses.
    const leasedBefore = modelJob.leasedBeforePolicy;
    if (leasedBefore !== undefined) {
      const live = runs.filter(
        (r) =>
          r.status === RunStatus.Leased &&
          (r.leaseExpiresAt ?? 0) > now &&
          world.fencesIssued.get(r.runId) === r.fence &&
          leasedBefore.get(r.runId) !== r.fence &&
          r.origin !== "backfill",
      );
      if (live.length > 1)
        world.fail(
          `(c) ${live.length} runs of ${job.jobId} (${job.overlapPolicy}) hold live leases: ${live.map((r) => world.describeRun(r)).join("; ")}`,
        );
    }
  }
}

/** What the lease command read before it asked for leases. */
export interface BeforeLease {
  readonly runs: ReadonlyMap<string, Run>;
  readonly cancelledJobs: ReadonlySet<string>;
  readonly atMostOnceJobs: ReadonlySet<string>;
}

export async function beforeLease(world: World): Promise<BeforeLease> {
  const runs = new Map((await world.allRuns()).map((r) => [r.runId, r]));
  const cancelledJobs = new Set<string>();
  const atMostOnceJobs = new Set<string>();
  for (const { jobId } of world.jobs) {
    const job = await world.storedJob(jobId);
    if (job?.status === JobStatus.Cancelled) cancelledJobs.add(jobId);
    if (job?.delivery === "at-most-once") atMostOnceJobs.add(jobId);
  }
  return { runs, cancelledJobs, atMostOnceJobs };
}

/** The checks on the leases one lease step granted, and on what it did to other runs. */
export async function grantChecks(
  world: World,
  before: BeforeLease,
  granted: ReadonlyArray<{
    readonly runId: string;
    readonly jobId: string;
    readonly scheduledFor: number;
    readonly attempt: number;
    readonly fence: number;
  }>,
): Promise<void> {
  for (const lease of granted) {
    // (f) A cancelled job gets no new lease.
    if (before.cancelledJobs.has(lease.jobId))
      world.fail(`(f) run ${lease.runId} of a cancelled job was leased`);
    // (b) At-most-once: a run is leased once; only an operator's replay starts it over. Its
    // attempt alone would not show a second lease after another path reset it to 0.
    if (before.atMostOnceJobs.has(lease.jobId) && lease.attempt !== 1)
      world.fail(`(b) at-most-once run ${lease.runId} leased again (attempt ${lease.attempt})`);
    if (before.atMostOnceJobs.has(lease.jobId) && world.leasedSinceReplay.has(lease.runId))
      world.fail(`(b) at-most-once run ${lease.runId} leased again without an operator's replay`);
    world.leasedSinceReplay.add(lease.runId);
    // (e) Fences only go up.
    const issued = world.fencesIssued.get(lease.runId) ?? 0;
    if (lease.fence <= issued)
      world.fail(`(e) run ${lease.runId} leased with fence ${lease.fence}, ${issued} was issued before`);
    world.fencesIssued.set(lease.runId, lease.fence);
  }
  // (c) A skipped run is one that never started: a run leased before (it may have run) waits
  // for the run ahead of it instead (the crash loop found one skipped after a PATCH).
  for (const run of await world.allRuns()) {
    const was = before.runs.get(run.runId);
    if (was && isUnfinished(was) && run.status === RunStatus.Skipped && run.fence > 0)
      world.fail(`(c) ${world.describeRun(run)} skipped after it was leased (fence ${run.fence})`);
  }
  // buffer-one: a run is skipped only while the buffer place is taken by another run that still
  // waits (a finished run's message, or a waiting run that ended, must not keep it). Judged on
  // the state before the step or after it: the step's leases run together, so another may have
  // taken the place just before, or finished the runs concerned just after.
  for (const run of await world.allRuns()) {
    const was = before.runs.get(run.runId);
    const skippedNow = was && isUnfinished(was) && run.status === RunStatus.Skipped;
    if (!skippedNow || !run.error?.includes("buffer-one")) continue;
    // A waiter counts only if it can still start: one that will only be ended (its attempts
    // used up, or leased before under at-most-once) holds no place.
    const job = await world.storedJob(run.jobId);
    const canStart = (r: Run) =>
      job !== undefined &&
      !neverStartsAgain(r, { maxAttempts: job.maxAttempts, atMostOnce: job.delivery === "at-most-once" });
    const waitedIn = (jobRuns: readonly Run[]) => {
      const waiting = jobRuns.filter((r) => isUnfinished(r) && r.wakes !== undefined).map((r) => r.wakes);
      return jobRuns.some(
        (r) =>
          waiting.includes(r.scheduledFor) &&
          isUnfinished(r) &&
          canStart(r) &&
          r.scheduledFor !== run.scheduledFor,
      );
    };
    const jobRuns = [...before.runs.values()].filter((r) => r.jobId === run.jobId);
    const held = waitedIn(jobRuns) || waitedIn(await world.runsOf(run.jobId));
    if (!held)
      world.fail(
        `(c) ${world.describeRun(run)} skipped under buffer-one while no other run waited in the buffer: ${jobRuns.map((r) => world.describeRun(r)).join("; ")}`,
      );
  }
  // (c) A message of one run never ends another: a run this step revoked (cancel-previous)
  // names the run that replaced it, which must be newer and then leased or still unfinished
  // (the step may have died between the revoke and that run's lease: its message comes back).
  for (const run of await world.allRuns()) {
    const was = before.runs.get(run.runId);
    if (!was || !isUnfinished(was) || run.status !== RunStatus.Cancelled) continue;
    if (before.cancelledJobs.has(run.jobId)) continue;
    const job = await world.storedJob(run.jobId);
    if (job?.status === JobStatus.Cancelled) continue;
    // A one-off's firing its schedule no longer has (a PATCH of its runAt killed before it
    // cancelled the run), never handed out: its own message cancels it (lease-runs.ts).
    const firing = job?.lastFiringAt ?? job?.nextRunAt;
    if (
      job?.schedule.kind === "once" &&
      firing !== undefined &&
      run.scheduledFor !== firing &&
      run.error === SUPERSEDED_REASON &&
      run.attempt === 0
    )
      continue;
    const named = /the run of (\S+) replaced it/.exec(run.error ?? "")?.[1];
    const by = named === undefined ? undefined : Date.parse(named);
    // The replacer as written, or made and carried by its message (decision 0051).
    const replacer =
      by === undefined ? undefined : (await world.runsOf(run.jobId)).find((r) => r.scheduledFor === by);
    const leasedNow = granted.some((g) => g.jobId === run.jobId && g.scheduledFor === by);
    if (!by || by <= run.scheduledFor || !replacer || !(leasedNow || isUnfinished(replacer)))
      world.fail(
        `(c) ${world.describeRun(run)} was ended by a run that is not a newer one about to start: ${replacer ? world.describeRun(replacer) : "none"}`,
      );
  }
}
