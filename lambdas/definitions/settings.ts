import { DELIVERY_LEAD_SECONDS, PAYLOAD_LIMIT_BYTES } from "@jobsched/contract";
import { z } from "zod";

/**
 * Timing settings shared by the CDK stack (which passes them to the Lambdas as environment
 * variables) and the local runtime. The local runtime ticks every 15 s rather than every
 * minute so repairs happen sooner; each tick reads all 1,024 shards, which costs dynalite about
 * a second of CPU, so ticking much faster would keep a laptop core busy.
 */
export interface SchedulerSettings {
  /** How often the tick fires. EventBridge rules cannot go below 60 s. */
  readonly tickSeconds: number;
  /**
   * Each shard group is swept at every this many ticks, the groups taking turns (decision
   * 0056): a sweep's reads cost the same whatever it finds, so sweeping each group every other
   * minute halves them. 1: every group at every tick.
   */
  readonly sweepEveryTicks: number;
  /**
   * How far past "now" a sweep looks: longer than a group's sweep period (tickSeconds times
   * sweepEveryTicks) so no run falls between, by the longest delivery lead and more.
   */
  readonly lookaheadSeconds: number;
  /**
   * How far ahead a recurring job's runs are made at once (decision 0044): the sweep creates
   * every firing's run up to this far ahead and moves the job on once, not once a firing. At
   * most 840 (SQS delays a message up to 15 minutes, less the delivery lead); 0: one firing a
   * sweep, up to the lookahead.
   */
  readonly advanceBlockSeconds: number;
  /** Default lease: the run queue's visibility timeout. */
  readonly leaseSeconds: number;
  /**
   * How long a created run may wait for its first lease (after its due time) or a lapsed
   * lease may stay unclaimed before the repair pass assumes its message was lost.
   */
  readonly repairGraceSeconds: number;
  /** Runs one tenant may start per second; excess runs wait, none is dropped. 0: no limit. */
  readonly tenantRunsPerSecond: number;
  /**
   * About how many leases the deployment grants a second (a planning figure, not a limit): a
   * second with many runs due becomes visible early enough for all of them to be leased before
   * it comes (delivery.ts, leadSecondsFor; decision 0014).
   */
  readonly leasesPerSecond: number;
  /** Retry backoff of jobs that do not set their own `retry`. */
  readonly retryBaseSeconds: number;
  readonly retryCapSeconds: number;
  /** Largest accepted payload (UTF-8 JSON bytes); at most 262,144 (MAX_PAYLOAD_BYTES). */
  readonly maxPayloadBytes: number;
  /**
   * Days a finished run (dead letters included) is kept before DynamoDB's TTL deletes it; a
   * replayed dead letter is kept until it finishes again. 0: kept for good.
   */
  readonly runRetentionDays: number;
  /** Jobs one tenant may create a second; a create past it is answered 429. 0: no limit. */
  readonly tenantCreatesPerSecond: number;
  /** Jobs one tenant may have active or paused at once; 0: no limit. */
  readonly tenantMaxActiveJobs: number;
  /** Job types one tenant may use (each has a queue of its own); 0: no limit. */
  readonly tenantMaxJobTypes: number;
  /**
   * Days a lane (a tenant's queue for one job type) may go without a run sent to it before it
   * is deleted, if it is empty; its type is then given back to the tenant's quota when no
   * active or paused job has it. 0: lanes are kept for good; otherwise at least 1.
   */
  readonly idleLaneDays: number;
  /**
   * 1: push targets may be on loopback, private, link-local or metadata addresses, and plain
   * http (the local runtime's own servers). 0 (AWS): refused at create and at connect.
   */
  readonly allowPrivateTargets: number;
  /**
   * The ports an https target's URL may name where allowPrivateTargets is 0 (AWS): 443 unless
   * the deployment's receivers listen elsewhere too (as text, a comma-separated list: "443,8443").
   * The local runtime, which allows private targets, allows any port (its receivers' are random).
   */
  readonly webhookPorts: readonly number[];
  /**
   * The roles the dispatcher may assume for Lambda and SQS targets, by the path and name in
   * their ARN (after `role/`), with IAM's wildcards `*` and `?`: the resource of the
   * dispatcher's `sts:AssumeRole` grant in AWS, and what a job's `target.roleArn` must match
   * (decision 0035). A role outside it cannot be assumed, whatever trusts the dispatcher.
   */
  readonly targetRoleNames: string;
  /**
   * 1: a run is written when it is made, as before decision 0051, as well as carried by its
   * message: for the deploy that upgrades from code that cannot read a made run's message (its
   * old lease functions would drop one), and before a rollback to such code. It also makes no
   * one-off ahead at create (decision 0058), which code from before would strand. 0: written
   * first at its lease (a write unit less a run). docs/deploy.md, "Upgrading to runs written at
   * their lease" and "Upgrading to one-offs made ahead at create".
   */
  readonly writeRunsWhenMade: number;
}

const DEFAULT_LIMITS = {
  retryBaseSeconds: 10,
  retryCapSeconds: 3_600,
  maxPayloadBytes: 262_144,
  runRetentionDays: 90,
  // One quota item per tenant takes each create: DynamoDB allows 1,000 writes a second to an item.
  tenantCreatesPerSecond: 200,
  tenantMaxActiveJobs: 100_000,
  tenantMaxJobTypes: 100,
  idleLaneDays: 7,
  webhookPorts: [443],
  targetRoleNames: "jobsched-target-*",
  writeRunsWhenMade: 0,
} as const;

export const CLOUD_SETTINGS: SchedulerSettings = {
  tickSeconds: 60,
  sweepEveryTicks: 2,
  lookaheadSeconds: 150,
  advanceBlockSeconds: 600,
  leaseSeconds: 30,
  repairGraceSeconds: 120,
  tenantRunsPerSecond: 0,
  // Lease calls scale out with Lambda concurrency; docs/CAPACITY.md puts one concurrent lease
  // call at ~500 leases a second, and a spike keeps several in flight per worker fleet.
  leasesPerSecond: 2_000,
  allowPrivateTargets: 0,
  ...DEFAULT_LIMITS,
};

export const LOCAL_SETTINGS: SchedulerSettings = {
  tickSeconds: 15,
  sweepEveryTicks: 1,
  lookaheadSeconds: 30,
  advanceBlockSeconds: 600,
  leaseSeconds: 30,
  repairGraceSeconds: 30,
  tenantRunsPerSecond: 0,
  // What dynalite and fauxqs grant on a 2-core laptop (bench-spike: 450-500 a second).
  leasesPerSecond: 400,
  allowPrivateTargets: 1,
  ...DEFAULT_LIMITS,
};

/** SQS's largest message, and so the largest payload a setting may allow (the contract's). */
export { PAYLOAD_LIMIT_BYTES };

const whole = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ message: "must be a number" })
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

/** A list of TCP ports, from an array (the defaults, a CDK context) or comma-separated text. */
const portList = z.preprocess(
  (value) => (typeof value === "string" ? value.split(",").map((part) => part.trim()) : value),
  z.array(whole(1, 65_535), { message: "must be a list of ports" }).min(1, "must name at least one port"),
);

/**
 * The one schema of the settings: each one's bounds, read the same way from the Lambdas'
 * environment (SETTING_NAME, see envNameOf), the CDK context (jobsched:settingName) and the
 * local runtime's environment. Values arrive as text and are coerced.
 */
export const settingsSchema = z
  .object({
    tickSeconds: whole(1),
    sweepEveryTicks: whole(1, 10),
    // A sweep's run is sent with a delay of up to its lookahead, and SQS delays at most 900 s.
    lookaheadSeconds: whole(1, 900),
    advanceBlockSeconds: whole(0, 840),
    leaseSeconds: whole(1, 43_200),
    repairGraceSeconds: whole(1),
    tenantRunsPerSecond: whole(0),
    leasesPerSecond: whole(1),
    retryBaseSeconds: whole(1),
    retryCapSeconds: whole(1),
    maxPayloadBytes: whole(1, PAYLOAD_LIMIT_BYTES),
    runRetentionDays: whole(0),
    tenantCreatesPerSecond: whole(0),
    tenantMaxActiveJobs: whole(0),
    tenantMaxJobTypes: whole(0),
    idleLaneDays: whole(0),
    allowPrivateTargets: whole(0, 1),
    webhookPorts: portList,
    targetRoleNames: z
      .string()
      .regex(
        /^[A-Za-z0-9+=,.@_/*?-]{1,512}$/,
        "must be a role path and name pattern: 1-512 of letters, digits, + = , . @ _ / - and the wildcards * and ?",
      ),
    writeRunsWhenMade: whole(0, 1),
  } satisfies Record<keyof SchedulerSettings, z.ZodType>)
  .refine((s) => s.retryCapSeconds >= s.retryBaseSeconds, {
    message: "must not be less than retryBaseSeconds",
    path: ["retryCapSeconds"],
  })
  .refine((s) => s.lookaheadSeconds >= shortestLookaheadSeconds(s), {
    message: `must be at least a group's sweep period (tickSeconds times sweepEveryTicks) plus the ${DELIVERY_LEAD_SECONDS} s delivery lead and a second, or runs fall between sweeps or start late`,
    path: ["lookaheadSeconds"],
  });

/**
 * The shortest lookahead that keeps every run's lead: a run due just past one sweep's horizon
 * is found a sweep period later, and must still be sent with its delivery lead, a second more
 * for the second SQS's delay rounds down.
 */
export function shortestLookaheadSeconds(
  settings: Pick<SchedulerSettings, "tickSeconds" | "sweepEveryTicks">,
): number {
  return sweepPeriodSeconds(settings) + DELIVERY_LEAD_SECONDS + 1;
}

/** How often each shard group is swept: every `sweepEveryTicks` ticks (decision 0056). */
export function sweepPeriodSeconds(
  settings: Pick<SchedulerSettings, "tickSeconds" | "sweepEveryTicks">,
): number {
  return settings.tickSeconds * settings.sweepEveryTicks;
}

/** A setting's environment variable: tickSeconds -> TICK_SECONDS. */
export function envNameOf(key: keyof SchedulerSettings): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase();
}

export const SETTING_KEYS = Object.keys(CLOUD_SETTINGS) as ReadonlyArray<keyof SchedulerSettings>;

/**
 * The settings from a source of text values (an environment, a CDK context), each missing one
 * taken from `defaults`. Throws one error naming every bad value by the source's own name.
 */
export function settingsFrom(
  read: (key: keyof SchedulerSettings) => string | undefined,
  defaults: SchedulerSettings,
  nameOf: (key: keyof SchedulerSettings) => string,
): SchedulerSettings {
  const input: Record<string, unknown> = { ...defaults };
  for (const key of SETTING_KEYS) {
    const text = read(key);
    if (text !== undefined && text !== "") input[key] = text;
  }
  const parsed = settingsSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const key = issue.path[0] as keyof SchedulerSettings | undefined;
    return `${key === undefined ? "settings" : nameOf(key)}: ${issue.message}`;
  });
  throw new Error(problems.join("; "));
}

/** The settings as the Lambdas' environment variables (what the stack sets). */
export function settingsEnvironment(settings: SchedulerSettings): Record<string, string> {
  return Object.fromEntries(SETTING_KEYS.map((key) => [envNameOf(key), String(settings[key])]));
}
