import fc from "fast-check";
import { parseRunId } from "../../lambdas/core/ids";
import type { SweepMessage } from "../../lambdas/core/ports";
import { RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { listDeadLetters, replayDeadLetter } from "../../lambdas/core/use-cases/dead-letters";
import { heartbeatRun } from "../../lambdas/core/use-cases/heartbeat-run";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { backfillJob, triggerJob } from "../../lambdas/core/use-cases/manual-runs";
import { repairRuns } from "../../lambdas/core/use-cases/repair-runs";
import { dispatchSweeps } from "../../lambdas/core/use-cases/sweep-dispatch";
import { sweepGroup } from "../../lambdas/core/use-cases/sweep-group";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { beforeLease, checkState, grantChecks } from "./checks";
import { Refusal } from "./crash-switch";
import { CALLER, TYPE, WORKER, type World } from "./world";

/**
 * The model's commands: API calls, worker actions, the scheduler's own invocations, SQS's
 * duplicates, crashes and the clock. Each runs the real use case through World.step and then
 * checks the state (checks.ts). The model state fast-check keeps is empty: the World holds the
 * reference record, so every command may run at any point (an index past the end wraps).
 */
type Model = object;
type Command = fc.AsyncCommand<Model, World>;

const iso = (ms: number) => new Date(ms).toISOString();

export abstract class Step implements Command {
  check(): boolean {
    return true;
  }
  async run(_: Model, world: World): Promise<void> {
    await this.act(world);
    await checkState(world);
  }
  abstract act(world: World): Promise<void>;
  abstract toString(): string;
}

export interface JobSpec {
  readonly schedule:
    | { readonly kind: "once"; readonly inSeconds: number }
    | { readonly kind: "cron"; readonly endInMinutes: number | undefined; readonly timeZone?: string }
    | { readonly kind: "interval"; readonly every: string; readonly endInMinutes: number | undefined };
  /** A jitter window (ISO 8601), on any schedule kind. */
  readonly jitter?: string | undefined;
  readonly overlapPolicy: "allow" | "skip" | "buffer-one" | "cancel-previous";
  readonly delivery: "at-least-once" | "at-most-once";
  readonly maxAttempts: number;
  readonly leaseSeconds: number;
  readonly maxLateness: number | undefined;
  readonly missedRuns: "catch-up" | "run-once" | "skip";
  /** Retry backoff base in seconds (the cap is four times it): quick, or long enough to act in. */
  readonly retryBase: number;
  /** Sent with an idempotency key: a create that crashed is retried by its client (RetryCreate). */
  readonly keyed?: boolean;
}

export class Create extends Step {
  constructor(readonly spec: JobSpec) {
    super();
  }
  async act(world: World) {
    const now = world.clock.now();
    const { schedule, maxLateness, retryBase, jitter, keyed, ...rest } = this.spec;
    const endAt =
      schedule.kind === "once" || schedule.endInMinutes === undefined
        ? {}
        : { endAt: iso(now + schedule.endInMinutes * 60_000) };
    const when =
      schedule.kind === "once"
        ? { runAt: iso(now + schedule.inSeconds * 1000) }
        : schedule.kind === "interval"
          ? { interval: { every: schedule.every }, ...endAt }
          : { cron: "* * * * *", ...(schedule.timeZone ? { timeZone: schedule.timeZone } : {}), ...endAt };
    const body = {
      type: TYPE,
      ...when,
      ...(jitter ? { jitter } : {}),
      ...rest,
      retry: { base: retryBase, cap: retryBase * 4 },
      ...(maxLateness ? { maxLateness } : {}),
      // Unique in the sequence, and the same each time the sequence is replayed (shrinking).
      ...(keyed ? { idempotencyKey: `k${++world.keysIssued}` } : {}),
    };
    const created = await world.step("create", () => createJob(world.deps, CALLER, body));
    if (!created && keyed && world.crash.crashed) world.unanswered.push(body);
    // A create that crashed may still have stored the job: the model finds it by listing.
    const jobId = created?.jobId ?? (await Create.orphan(world));
    if (jobId === undefined) return;
    Create.register(world, jobId, schedule, this.spec.overlapPolicy);
    world.note(`created ${jobId.slice(-6)} ${JSON.stringify(body)}`);
  }
  static register(world: World, jobId: string, schedule: JobSpec["schedule"], overlapPolicy: string) {
    if (world.jobs.some((j) => j.jobId === jobId)) return;
    world.jobs.push({
      jobId,
      bounded: schedule.kind === "once" || schedule.endInMinutes !== undefined,
      leasedBeforePolicy: overlapPolicy === "allow" ? undefined : new Map(),
    });
  }
  static async orphan(world: World): Promise<string | undefined> {
    const known = new Set(world.jobs.map((j) => j.jobId));
    const page = await world.stores.jobs.listJobs(CALLER.tenant, {}, 100);
    return page.items.find((j) => !known.has(j.jobId))?.jobId;
  }
  toString() {
    return `Create(${JSON.stringify(this.spec)})`;
  }
}

/**
 * A client retries a create that got no answer (it crashed) with the same body and key: the
 * job is then stored once, whatever the crash left (decision 0048's orderings among them).
 */
export class RetryCreate extends Step {
  /** With another body: a one-off's run two seconds later (its first run, if made, is not the job's). */
  constructor(private readonly moved = false) {
    super();
  }
  async act(world: World) {
    const unanswered = world.unanswered[0];
    if (!unanswered) return;
    const body =
      this.moved && typeof unanswered.runAt === "string"
        ? { ...unanswered, runAt: new Date(Date.parse(unanswered.runAt) + 2_000).toISOString() }
        : unanswered;
    if (body !== unanswered) world.unanswered[0] = body;
    const answer = await world.step("create (retry)", () => createJob(world.deps, CALLER, body));
    if (!answer && world.crash.crashed) return; // crashed again: retried again later
    world.unanswered.shift();
    if (!answer) return; // refused (a 4xx): the client gives up
    const schedule: JobSpec["schedule"] =
      typeof body.runAt === "string"
        ? { kind: "once", inSeconds: 0 }
        : { kind: "cron", endInMinutes: typeof body.endAt === "string" ? 1 : undefined };
    Create.register(world, answer.jobId, schedule, String(body.overlapPolicy));
    world.note(`retried create ${answer.jobId.slice(-6)}: ${answer.created ? "created" : "existing"}`);
  }
  toString() {
    return `RetryCreate(${this.moved ? "moved" : ""})`;
  }
}

type Patch =
  | { runInSeconds: number }
  | { overlapPolicy: JobSpec["overlapPolicy"] }
  | { delivery: JobSpec["delivery"] }
  | { maxAttempts: number }
  | { cron: string }
  | { interval: { every: string } }
  | { jitter: string | null };

export class PatchJob extends Step {
  constructor(
    readonly index: number,
    readonly patch: Patch,
  ) {
    super();
  }
  async act(world: World) {
    const job = world.job(this.index);
    if (!job) return;
    const policyOf = async () => (await world.storedJob(job.jobId))?.overlapPolicy ?? "allow";
    const policyBefore = await policyOf();
    // A one-off moved (or a recurring job made one) from now: its run may be made already.
    const body =
      "runInSeconds" in this.patch
        ? { runAt: iso(world.clock.now() + this.patch.runInSeconds * 1000) }
        : this.patch;
    const done = await world.step("patch", () => updateJob(world.deps, CALLER, job.jobId, body, undefined));
    // Judged by the store: a PATCH killed after its write changed the policy all the same.
    const policyAfter = await policyOf();
    if (policyAfter === "allow") job.leasedBeforePolicy = undefined;
    else if (policyAfter !== policyBefore) {
      const leased = (await world.runsOf(job.jobId)).filter((r) => r.status === RunStatus.Leased);
      job.leasedBeforePolicy = new Map(leased.map((r) => [r.runId, r.fence]));
    }
    // A new schedule keeps a recurring job's end; a one-off given one recurs for ever. Judged
    // by the store: a PATCH killed after its write changed the schedule all the same.
    if ("cron" in this.patch || "interval" in this.patch || "runInSeconds" in this.patch) {
      const schedule = (await world.storedJob(job.jobId))?.schedule;
      if (schedule) job.bounded = schedule.kind === "once" || schedule.endAt !== undefined;
    }
    world.note(`patch ${job.jobId.slice(-6)} ${JSON.stringify(this.patch)}${done ? "" : " (refused)"}`);
  }
  toString() {
    return `Patch(${this.index}, ${JSON.stringify(this.patch)})`;
  }
}

export class Control extends Step {
  constructor(
    readonly index: number,
    readonly action: "pause" | "resume" | "cancel",
  ) {
    super();
  }
  async act(world: World) {
    const job = world.job(this.index);
    if (!job) return;
    const done = await world.step(this.action, () => controlJob(world.deps, CALLER, job.jobId, this.action));
    world.note(`${this.action} ${job.jobId.slice(-6)}${done ? "" : " (refused)"}`);
  }
  toString() {
    return `Control(${this.index}, ${this.action})`;
  }
}

export class Trigger extends Step {
  constructor(readonly index: number) {
    super();
  }
  async act(world: World) {
    const job = world.job(this.index);
    if (!job) return;
    const run = await world.step("trigger", () => triggerJob(world.deps, CALLER, job.jobId, {}));
    world.note(`trigger ${job.jobId.slice(-6)}${run ? ` -> ${run.runId}` : " (refused)"}`);
  }
  toString() {
    return `Trigger(${this.index})`;
  }
}

export class Backfill extends Step {
  constructor(
    readonly index: number,
    readonly minutesBack: number,
  ) {
    super();
  }
  async act(world: World) {
    const job = world.job(this.index);
    if (!job) return;
    const now = world.clock.now();
    const body = { from: iso(now - this.minutesBack * 60_000), to: iso(now) };
    const done = await world.step("backfill", () => backfillJob(world.deps, CALLER, job.jobId, body));
    world.note(
      `backfill ${job.jobId.slice(-6)} ${this.minutesBack} min${done ? `: ${JSON.stringify(done)}` : " (refused)"}`,
    );
  }
  toString() {
    return `Backfill(${this.index}, ${this.minutesBack})`;
  }
}

export class Replay extends Step {
  constructor(readonly index: number) {
    super();
  }
  async act(world: World) {
    const page = await world.step("dead letters", () => listDeadLetters(world.deps, CALLER, {}));
    const dead = page?.deadLetters[this.index % Math.max(1, page.deadLetters.length)];
    if (!dead) return;
    const replays = async () =>
      (await world.runsOf(dead.jobId)).find((r) => r.runId === dead.runId)?.replays ?? 0;
    const replaysBefore = await replays();
    const done = await world.step("replay", () => replayDeadLetter(world.deps, CALLER, dead.runId));
    // Judged by the store (a replay killed after its write still replayed the run).
    if ((await replays()) > replaysBefore) world.leasedSinceReplay.delete(dead.runId);
    world.note(`replay ${dead.runId}${done ? "" : " (refused)"}`);
  }
  toString() {
    return `Replay(${this.index})`;
  }
}

/**
 * A tick of `groups` as the deployment runs one (decision 0059): their messages handed out with
 * their slices of the one-offs made ahead (the ledger moved after), then every message waiting
 * swept. A sweep killed, or one that reports failed shards, leaves its message for SQS to
 * deliver again at the next tick.
 */
export async function tick(world: World, groups: readonly number[]) {
  await world.step("tick", () => dispatchSweeps(world.deps, groups, world.clock.now()));
  for (const message of world.sweeps.takeAll()) await sweepMessage(world, message);
}

async function sweepMessage(world: World, message: SweepMessage) {
  const stats = await world.step("sweep", () => sweepGroup(world.deps, message.group, message.ahead));
  if (stats === undefined || stats.failedShards > 0) world.sweeps.pending.push(message);
  else world.swept.push(message);
  if (stats && stats.runsCreated + stats.missedRecorded > 0)
    world.note(`sweep group ${message.group}: ${stats.runsCreated} created, ${stats.missedRecorded} missed`);
}

/** SQS delivers a sweep message again, long after its first sweep: its slice sent twice. */
export class SweepAgain extends Step {
  constructor(readonly index: number) {
    super();
  }
  async act(world: World) {
    const message = world.swept[world.swept.length - 1 - (this.index % Math.max(1, world.swept.length))];
    if (message) await sweepMessage(world, message);
  }
  toString() {
    return `SweepAgain(${this.index})`;
  }
}

/**
 * A tick whose messages SQS delivers at once: each is swept before the tick goes on to write the
 * ledger, so a sweep of the tick's own slice that fails rewinds the group under the tick's write
 * (the race a review found erasing such a rewind). With `sendsRefused`, those sweeps' sends fail:
 * two such ticks near a made-ahead firing are that race (the second's rewind finds the first's).
 */
export class SweepEager extends Step {
  constructor(readonly sendsRefused: boolean) {
    super();
  }
  async act(world: World) {
    const sweeps = world.sweeps;
    const dispatch = sweeps.dispatch;
    const queue = world.queue;
    const send = queue.send;
    sweeps.dispatch = async (messages) => {
      await dispatch.call(sweeps, messages);
      if (this.sendsRefused)
        queue.send = async () => {
          throw new Refusal();
        };
      try {
        for (const message of sweeps.takeAll()) await sweepMessage(world, message);
      } finally {
        queue.send = send;
      }
    };
    try {
      await tick(world, world.sweepGroups());
    } finally {
      sweeps.dispatch = dispatch;
    }
  }
  toString() {
    return `SweepEager(${this.sendsRefused ? "sends refused" : ""})`;
  }
}

/** A tick of every group that holds the model's jobs, at any moment (a tick delivered late, or twice). */
export class Sweep extends Step {
  async act(world: World) {
    await tick(world, world.sweepGroups());
  }
  toString() {
    return "Sweep";
  }
}

export class Repair extends Step {
  async act(world: World) {
    const stats = await world.step("repair", () => repairRuns(world.deps));
    if (stats && stats.resent + stats.settled > 0)
      world.note(`repair: ${stats.resent} resent, ${stats.settled} settled`);
  }
  toString() {
    return "Repair";
  }
}

export class LeaseRuns extends Step {
  constructor(readonly max: number) {
    super();
  }
  async act(world: World) {
    // A receive that finds nothing does nothing: skip the checks' reads (most seconds of Live).
    if (!world.queue.hasVisible(TYPE)) return;
    const before = await beforeLease(world);
    const body = { workerId: "w", types: [TYPE], max: this.max, waitSeconds: 0 };
    const leases = (await world.step("lease", () => leaseRuns(world.deps, WORKER, body))) ?? [];
    const granted = leases.map((lease) => {
      const key = parseRunId(lease.runId);
      if (!key) throw new Error(`unreadable run id ${lease.runId}`);
      return { lease, jobId: key.jobId, scheduledFor: key.scheduledFor };
    });
    world.held.push(...granted);
    if (granted.length > 0)
      world.note(
        `leased ${granted.map((g) => `${g.lease.runId.slice(-30)} f${g.lease.fence} a${g.lease.attempt}`).join(", ")}`,
      );
    await grantChecks(
      world,
      before,
      granted.map((g) => ({ ...g.lease, jobId: g.jobId, scheduledFor: g.scheduledFor })),
    );
  }
  toString() {
    return `Lease(${this.max})`;
  }
}

export class Heartbeat extends Step {
  constructor(readonly index: number) {
    super();
  }
  async act(world: World) {
    const held = world.lease(this.index);
    if (!held) return;
    const stored = await world.stores.runs.getRun(held.jobId, held.scheduledFor);
    const done = await world.step("heartbeat", () =>
      heartbeatRun(world.deps, WORKER, held.lease.runId, { fence: held.lease.fence }),
    );
    // (e) No write with a stale fence is accepted.
    if (done && stored?.fence !== held.lease.fence)
      world.fail(
        `(e) heartbeat with fence ${held.lease.fence} accepted on ${stored ? world.describeRun(stored) : "no run"}`,
      );
    world.note(`heartbeat ${held.lease.runId.slice(-30)} f${held.lease.fence}${done ? "" : " (refused)"}`);
  }
  toString() {
    return `Heartbeat(${this.index})`;
  }
}

export type Outcome = "succeed" | "fail" | "fail-for-good";

export class Complete extends Step {
  constructor(
    readonly index: number,
    readonly outcome: Outcome,
  ) {
    super();
  }
  async act(world: World) {
    const held = world.lease(this.index);
    if (!held) return;
    await complete(world, held, this.outcome);
  }
  toString() {
    return `Complete(${this.index}, ${this.outcome})`;
  }
}

/** A worker reports an outcome for a lease it holds (or held), and forgets the lease after an answer. */
export async function complete(world: World, held: World["held"][number], outcome: Outcome): Promise<void> {
  const stored = await world.stores.runs.getRun(held.jobId, held.scheduledFor);
  const body =
    outcome === "succeed"
      ? { fence: held.lease.fence, result: "succeeded" }
      : { fence: held.lease.fence, result: "failed", retryable: outcome === "fail", error: "model failure" };
  let answered = false;
  const done = await world.step(`complete ${outcome}`, async () => {
    const result = await completeRun(world.deps, WORKER, held.lease.runId, body);
    answered = true;
    return result;
  });
  if (done && stored?.fence !== held.lease.fence)
    world.fail(
      `(e) completion with fence ${held.lease.fence} accepted on ${stored ? world.describeRun(stored) : "no run"}`,
    );
  world.note(
    `complete ${outcome} ${held.lease.runId.slice(-30)} f${held.lease.fence}: ${done ? done.status : "refused or crashed"}`,
  );
  // A worker keeps a lease whose completion crashed (it retries); any answer ends it.
  if (answered || !world.crash.crashed) world.held.splice(world.held.indexOf(held), 1);
}

export class Forget extends Step {
  constructor(readonly index: number) {
    super();
  }
  async act(world: World) {
    const held = world.lease(this.index);
    if (!held) return;
    world.held.splice(world.held.indexOf(held), 1);
    world.note(`worker goes silent on ${held.lease.runId.slice(-30)} f${held.lease.fence}`);
  }
  toString() {
    return `Forget(${this.index})`;
  }
}

export class Duplicate extends Step {
  constructor(
    readonly index: number,
    readonly delayMs: number,
  ) {
    super();
  }
  async act(world: World) {
    const original = world.queue.messages[this.index % Math.max(1, world.queue.messages.length)];
    if (!original) return;
    world.queue.duplicate(this.index, this.delayMs);
    world.note(`SQS duplicates the message of ${original.message.runId.slice(-30)} (in ${this.delayMs} ms)`);
  }
  toString() {
    return `Duplicate(${this.index}, ${this.delayMs})`;
  }
}

export class Advance extends Step {
  constructor(readonly ms: number) {
    super();
  }
  async act(world: World) {
    world.clock.advance(this.ms);
  }
  toString() {
    return `Advance(${this.ms})`;
  }
}

/**
 * Time passing to just before the next firing of a one-off made ahead (decision 0058), where
 * generated sequences rarely get by Advance alone: the sweeps, faults and crashes that follow
 * meet its slice. No such job: no move.
 */
export class ApproachAhead extends Step {
  constructor(readonly beforeMs: number) {
    super();
  }
  async act(world: World) {
    const now = world.clock.now();
    const firings: number[] = [];
    for (const { jobId } of world.jobs) {
      const job = await world.storedJob(jobId);
      if (job?.madeAheadAt !== undefined && job.madeAheadAt - this.beforeMs > now)
        firings.push(job.madeAheadAt);
    }
    if (firings.length > 0) world.clock.set(Math.min(...firings) - this.beforeMs);
  }
  toString() {
    return `ApproachAhead(${this.beforeMs})`;
  }
}

/**
 * Time passing as it does in a deployment: each second a worker asks for runs; at each tick
 * (every 15 s locally, every minute in the cloud's timing) the sweep of the groups whose turn it
 * is and the repair pass run. The worker holds what it gets, or completes
 * each run at once (succeeding or failing it): the other commands act on held leases later.
 */
export class Live extends Step {
  constructor(
    readonly seconds: number,
    readonly worker: "holds" | Outcome,
  ) {
    super();
  }
  async act(world: World) {
    for (let s = 1; s <= this.seconds; s++) {
      world.clock.advance(1_000);
      if (Math.floor(world.clock.now() / 1000) % world.deps.settings.tickSeconds === 0) {
        await tick(world, world.sweepGroupsOfTick());
        await new Repair().act(world);
      }
      const before = world.held.length;
      await new LeaseRuns(3).act(world);
      if (this.worker === "holds") continue;
      for (const held of world.held.slice(before)) await complete(world, held, this.worker);
    }
  }
  toString() {
    return `Live(${this.seconds}, ${this.worker})`;
  }
}

/** The inner step with a fault armed on its k-th call to a store or the queue; disarmed after it. */
abstract class Faulted extends Step {
  constructor(
    readonly call: number,
    readonly inner: Step,
  ) {
    super();
  }
  protected abstract arm(world: World): void;
  async act(world: World) {
    this.arm(world);
    try {
      await this.inner.act(world);
    } finally {
      world.crash.disarm();
    }
  }
  toString() {
    return `${this.constructor.name}(${this.call}, ${this.inner.toString()})`;
  }
}

/** The inner step's process dies before its k-th call to a store or the queue. */
export class Crashing extends Faulted {
  protected arm(world: World) {
    world.crash.arm(this.call);
  }
}

/** The inner step's k-th call to a store or a queue is refused by the service; the step goes on. */
export class Refused extends Faulted {
  protected arm(world: World) {
    world.crash.armRefusal(this.call);
  }
}

/** Every call the inner step makes to one port method is refused (that part of a service down). */
export class Outage extends Step {
  constructor(
    readonly method: string,
    readonly inner: Step,
  ) {
    super();
  }
  async act(world: World) {
    world.crash.armOutage(this.method);
    try {
      await this.inner.act(world);
    } finally {
      world.crash.disarm();
    }
  }
  toString() {
    return `Outage(${this.method}, ${this.inner.toString()})`;
  }
}

/** The inner step's k-th call to a store or the queue is carried out and answered again (a lost answer). */
export class LosingAnswer extends Faulted {
  protected arm(world: World) {
    world.crash.armLostAnswer(this.call);
  }
}

const jobSpec: fc.Arbitrary<JobSpec> = fc.record({
  schedule: fc.oneof(
    // Near (within the sweep's lookahead), on both sides of the 15 minutes within which a
    // one-off's run is made at create (decision 0048), and of the 17 beyond which it is made
    // ahead and sent by the sweep (decision 0058).
    fc.record({
      kind: fc.constant("once" as const),
      inSeconds: fc.oneof(
        fc.integer({ min: 0, max: 90 }),
        fc.integer({ min: 880, max: 960 }),
        fc.integer({ min: 1000, max: 1100 }),
      ),
    }),
    fc.record({
      kind: fc.constant("cron" as const),
      endInMinutes: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      timeZone: fc.constantFrom("UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kathmandu"),
    }),
    fc.record({
      kind: fc.constant("interval" as const),
      every: fc.constantFrom("1m", "90s", "2m"),
      endInMinutes: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    }),
  ),
  jitter: fc.option(fc.constantFrom("PT10S", "PT45S"), { nil: undefined }),
  overlapPolicy: fc.constantFrom("allow", "skip", "buffer-one", "cancel-previous"),
  delivery: fc.constantFrom("at-least-once", "at-most-once"),
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  leaseSeconds: fc.constantFrom(5, 20, 90),
  maxLateness: fc.option(fc.constantFrom(10, 120), { nil: undefined }),
  missedRuns: fc.constantFrom("catch-up", "run-once", "skip"),
  retryBase: fc.constantFrom(1, 30),
  keyed: fc.boolean(),
});

const index = fc.nat({ max: 7 });

const patch: fc.Arbitrary<Patch> = fc.oneof(
  fc.record({ runInSeconds: fc.constantFrom(30, 120, 600, 1_000) }),
  fc.record({ overlapPolicy: fc.constantFrom("allow", "skip", "buffer-one", "cancel-previous") }),
  fc.record({ delivery: fc.constantFrom("at-least-once", "at-most-once") }),
  fc.record({ maxAttempts: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ cron: fc.constantFrom("* * * * *", "*/2 * * * *") }),
  fc.record({ interval: fc.record({ every: fc.constantFrom("1m", "90s") }) }),
  fc.record({ jitter: fc.constantFrom("PT20S", null) }),
);

/** Each command with how often it is drawn: the scheduler's steps and the clock often, so
 * that sequences reach leases, lapses and later firings; API calls and faults less. */
const plainSteps: ReadonlyArray<{ arbitrary: fc.Arbitrary<Step>; weight: number }> = [
  { weight: 3, arbitrary: jobSpec.map((spec) => new Create(spec)) },
  { weight: 1, arbitrary: fc.boolean().map((moved) => new RetryCreate(moved)) },
  { weight: 1, arbitrary: fc.tuple(index, patch).map(([i, p]) => new PatchJob(i, p)) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        index,
        fc.constantFrom("pause", "resume", "cancel") as fc.Arbitrary<"pause" | "resume" | "cancel">,
      )
      .map(([i, a]) => new Control(i, a)),
  },
  { weight: 1, arbitrary: index.map((i) => new Trigger(i)) },
  {
    weight: 1,
    arbitrary: fc.tuple(index, fc.integer({ min: 1, max: 3 })).map(([i, m]) => new Backfill(i, m)),
  },
  { weight: 1, arbitrary: index.map((i) => new Replay(i)) },
  { weight: 4, arbitrary: fc.constant(new Sweep()) },
  { weight: 1, arbitrary: fc.nat({ max: 7 }).map((i) => new SweepAgain(i)) },
  { weight: 1, arbitrary: fc.boolean().map((refused) => new SweepEager(refused)) },
  { weight: 2, arbitrary: fc.constant(new Repair()) },
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 }).map((max) => new LeaseRuns(max)) },
  { weight: 2, arbitrary: index.map((i) => new Heartbeat(i)) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(index, fc.constantFrom("succeed", "fail", "fail-for-good") as fc.Arbitrary<Outcome>)
      .map(([i, o]) => new Complete(i, o)),
  },
  { weight: 1, arbitrary: index.map((i) => new Forget(i)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.nat({ max: 15 }), fc.constantFrom(0, 1_000, 30_000))
      .map(([i, d]) => new Duplicate(i, d)),
  },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.constantFrom(5, 20, 60, 120),
        fc.constantFrom("holds", "holds", "succeed", "fail", "fail-for-good"),
      )
      .map(([seconds, worker]) => new Live(seconds, worker as "holds" | Outcome)),
  },
  {
    weight: 6,
    arbitrary: fc
      .constantFrom(500, 2_000, 5_000, 10_000, 20_000, 31_000, 45_000, 61_000, 300_000)
      .map((ms) => new Advance(ms)),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(5_000, 20_000, 100_000, 170_000).map((ms) => new ApproachAhead(ms)),
  },
];

/**
 * Every command, and each of the system's own steps killed between two of its calls, answered
 * twice, or refused one call.
 */
export function commandArbitraries(): fc.Arbitrary<Command>[] {
  const step = fc.oneof(...plainSteps);
  // Mostly among a step's first calls; now and then deep in a long one (a sweep makes a call a
  // shard, and its sends come after them all).
  const k = fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 8 }) },
    fc.integer({ min: 9, max: 160 }),
  );
  const crashing = fc.tuple(k, step).map(([call, inner]) => new Crashing(call, inner));
  const losing = fc.tuple(k, step).map(([call, inner]) => new LosingAnswer(call, inner));
  const refused = fc.tuple(k, step).map(([call, inner]) => new Refused(call, inner));
  // The calls a run's way depends on most: SQS's sends, the due index's reads, the jobs' reads,
  // the runs' writes, the ledger's.
  const outage = fc
    .tuple(
      fc.constantFrom(
        "send",
        "dispatch",
        "getAheadLedger",
        "queryAhead",
        "queryDue",
        "getJobs",
        "createRun",
        "moveAheadLedger",
        "rewindAheadLedger",
      ),
      step,
    )
    .map(([method, inner]) => new Outage(method, inner));
  return [
    fc.oneof(
      { weight: 12, arbitrary: step },
      { weight: 1, arbitrary: crashing },
      { weight: 1, arbitrary: losing },
      { weight: 1, arbitrary: refused },
      { weight: 1, arbitrary: outage },
    ),
  ];
}
