import { JobStatus } from "../../lambdas/core/job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { checkState } from "./checks";
import { complete, tick } from "./commands";
import { isUnfinished, TYPE, WORKER, type World } from "./world";

/** How long, in the model's time, well-behaved workers get to bring everything to an end. */
const DRAIN_LIMIT_MS = 4 * 3_600_000;

/**
 * (d) Once workers stop failing, every run reaches a final state and every bounded job
 * completes. From the end of a sequence, nothing crashes and the workers complete every run
 * they hold or lease; the scheduler's own steps run as their timers would (the sweep and the
 * repair pass each minute at the least), the clock jumping from one thing due to the next.
 * Runs of jobs still active and recurring keep coming: those due after the drain began are
 * not waited for.
 */
export async function drain(world: World): Promise<void> {
  world.crash.disarm();
  world.note("drain: workers stop failing");
  const from = world.clock.now();
  for (const held of [...world.held]) await complete(world, held, "succeed");
  while (world.clock.now() - from <= DRAIN_LIMIT_MS) {
    await tick(world, world.sweepGroups());
    await world.step("repair", () => repairRuns(world.deps));
    const leases =
      (await world.step("lease", () =>
        leaseRuns(world.deps, WORKER, { workerId: "w-drain", types: [TYPE], max: 100, waitSeconds: 0 }),
      )) ?? [];
    for (const lease of leases) {
      const [jobId, at] = [lease.jobId, Date.parse(lease.scheduledFor)];
      await complete(world, { lease, jobId, scheduledFor: at }, "succeed");
    }
    await checkState(world);
    if (leases.length === 0) {
      if ((await unsettled(world, from)).length === 0) return;
      world.clock.set(await nextEvent(world));
    }
  }
  world.fail(
    `(d) after ${DRAIN_LIMIT_MS / 3_600_000} h of well-behaved workers: ${(await unsettled(world, from)).join("; ")}`,
  );
}

/** What has not ended yet that must: runs due before the drain, and bounded jobs. */
async function unsettled(world: World, from: number): Promise<string[]> {
  const left: string[] = [];
  for (const modelJob of world.jobs) {
    const job = await world.shownJob(modelJob.jobId);
    if (!job) continue;
    const runs = await world.runsOf(job.jobId);
    for (const run of runs.filter((r) => isUnfinished(r) && r.scheduledFor <= from))
      left.push(world.describeRun(run));
    if (modelJob.bounded && job.status === JobStatus.Active)
      left.push(`bounded job ${job.jobId.slice(-6)} still active (next run ${job.nextRunAt})`);
  }
  return left;
}

/** The next instant something becomes due: a message, a repair check; at most a minute on. */
async function nextEvent(world: World): Promise<number> {
  const now = world.clock.now();
  const instants = [
    ...world.queue.messages.map((m) => m.visibleAt),
    ...(await world.allRuns()).flatMap((r) => (r.checkAt === undefined ? [] : [r.checkAt])),
  ].filter((t) => t > now);
  return Math.max(now + 1_000, Math.min(now + 60_000, ...instants));
}
