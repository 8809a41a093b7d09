/**
 * capacity-model: the deployed system at a top-of-the-hour spike, component by component:
 * the default AWS quota, the peak load the spike puts on it, and which quota gives out first.
 *
 *   npx tsx scripts/capacity-model.ts [--runs 1000000] [--tenants 1] [--job-kb 1]
 *     [--drain-seconds 60] [--runs-per-lease 50] [--lease-hold-ms 150]
 *     [--runs-per-completion 50] [--json]
 *
 * A model, not a measurement: it counts the requests and write units the code issues per run
 * (read off the code, per step, below) and spreads them over the windows the design gives each
 * step (settings in lambdas/definitions/settings.ts). docs/CAPACITY.md explains each line.
 * Every figure is a rate at the peak of its window, against the quota that bounds it.
 */

import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DELIVERY_LEAD_SECONDS, leadSecondsFor } from "../lambdas/core/delivery";
import { REPAIR_PARTITIONS, SHARD_COUNT, SWEEP_GROUP_COUNT } from "../lambdas/core/keys";
import { CLOUD_SETTINGS, sweepPeriodSeconds } from "../lambdas/definitions/settings";
import { TENANT_INDEX } from "../lambdas/definitions/table";
import { DEFAULT_STACK_LIMITS } from "../packages/cdk/src/stack-limits";

export interface SpikeInputs {
  /** Runs due at the same second (every-minute or hourly crons: jobs exist before the spike). */
  readonly runs: number;
  /** Tenants owning them, evenly (one lane per tenant and type; one tenant-index key each). */
  readonly tenants: number;
  /** Job item size in KB (a payload rides in the job item; an update costs its size in WRU). */
  readonly jobKb: number;
  /** Seconds after the due second in which the workers complete every run. */
  readonly drainSeconds: number;
  /** Runs one lease request carries (the worker SDK asks for up to 50). */
  readonly runsPerLease: number;
  /**
   * How long one lease request keeps its Lambda busy: its receive and conditional updates. It
   * no longer holds the response until the due instant (decision 0014: the worker holds).
   */
  readonly leaseHoldMs: number;
  /** Completions one POST /internal/completions carries (the SDK batches up to 100). */
  readonly runsPerCompletion: number;
  /** Runs one sweeper group fires per second (10-run batches, 8 shards at once; see the doc). */
  readonly sweepRunsPerGroupSecond: number;
}

export const DEFAULT_INPUTS: SpikeInputs = {
  runs: 1_000_000,
  tenants: 1,
  jobKb: 1,
  drainSeconds: 60,
  runsPerLease: 50,
  leaseHoldMs: 150,
  runsPerCompletion: 50,
  sweepRunsPerGroupSecond: 2_000,
};

/** Whether the tenant index projects a job's status (a job's end would rewrite its entry). */
const TENANT_INDEX_HOLDS_STATUS = (TENANT_INDEX.projectedAttributes as readonly string[]).includes("status");

/** Default quotas (us-east-1, a new account), and the per-partition limits that do not move. */
export const QUOTAS = {
  apiGatewayRps: 10_000,
  lambdaConcurrency: 1_000,
  sqsInFlightPerQueue: 120_000,
  dynamoTableWru: 40_000,
  dynamoTableRru: 40_000,
  partitionWru: 1_000,
  partitionRru: 3_000,
  sweeperMaxConcurrency: 32,
} as const;

export interface ComponentLoad {
  readonly component: string;
  readonly quota: string;
  readonly limit: number;
  readonly load: number;
  /** load / limit: above 1 the spike is throttled there. */
  readonly ratio: number;
  /** Whether the limit is an account quota one can ask AWS to raise, or a design limit. */
  readonly raise: "quota increase" | "design change" | "settings";
  readonly note: string;
}

/**
 * Write units per run, per step, read off the code (one-KB items unless said; decision 0041):
 * - sweep: no run put: a run made is carried by its message until its lease writes it
 *   (decision 0051); job advance (jobKb) + due-index move (delete + put: 2); the tenant index
 *   holds keys and type only, so an advance does not touch it;
 * - lease: the run's first write (1: no index entry);
 * - completion: run update (1).
 * (A one-off job's run is its job's last, and its end is its run's: no write marks the job
 * (decision 0057; before, 1 on the job item, the tenant index holding no status: decision 0047),
 * and no repair-index entry either (decision 0045); the spike's runs are recurring jobs'
 * firings, the one-off rows say what differs.)
 * (bench-cost counts every write by these rules: scripts/bench-cost.ts, item-size.ts.)
 * Reads per run: the lease step's BatchGet of the job (strongly consistent: jobKb / 4 KB,
 * rounded up), the sweep's due-index query (projected ~0.3 KB: 0.075 RRU) and its one
 * consistent query of the job's block of runs (1 RRU, a job firing once in the spike).
 */
export function writeUnitsPerRun(jobKb: number) {
  const jobWrite = Math.max(1, Math.ceil(jobKb));
  return {
    sweep: jobWrite + 2,
    lease: 1,
    completion: 1,
    leaseReads: Math.max(1, Math.ceil(jobKb / 4)),
    sweepReads: 0.075 + 1,
  };
}

export function capacityModel(inputs: SpikeInputs = DEFAULT_INPUTS): ComponentLoad[] {
  const { runs, tenants, drainSeconds } = inputs;
  const units = writeUnitsPerRun(inputs.jobKb);
  // The worst phase of the tick: a sweep that sees the due second only lookahead less its
  // group's sweep period before it, and must have every run visible DELIVERY_LEAD_SECONDS
  // before it. The groups take turns (decision 0056): a tick's cohort holds 1/sweepEveryTicks
  // of the shards, so of the second's runs, and the cohorts sweep a tick apart.
  const sweepWindow =
    CLOUD_SETTINGS.lookaheadSeconds - sweepPeriodSeconds(CLOUD_SETTINGS) - DELIVERY_LEAD_SECONDS;
  const cohortGroups = SWEEP_GROUP_COUNT / CLOUD_SETTINGS.sweepEveryTicks;
  const cohortRuns = runs / CLOUD_SETTINGS.sweepEveryTicks;
  const sweepSeconds = Math.max(cohortRuns / (cohortGroups * inputs.sweepRunsPerGroupSecond), 1);
  const sweepRate = cohortRuns / Math.min(sweepSeconds, sweepWindow);
  // Leases are granted in the lead before the due second, which grows with the second's
  // density up to MAX_LEAD_SECONDS (decision 0014); the base lead is the sweep's to keep.
  const leaseWindow = leadSecondsFor(runs, CLOUD_SETTINGS.leasesPerSecond);
  const leaseRequests = runs / inputs.runsPerLease;
  const leaseRps = leaseRequests / leaseWindow;
  const completionRps = runs / drainSeconds / inputs.runsPerCompletion;
  const completedRuns = runs / drainSeconds;
  const perTenant = runs / tenants;

  const rows: Omit<ComponentLoad, "ratio">[] = [
    {
      component: "API Gateway (HTTP API)",
      quota: "stage throttle (jobsched:apiRateLimit; the account's 10,000 above it), requests/s",
      limit: Math.min(QUOTAS.apiGatewayRps, DEFAULT_STACK_LIMITS.apiRateLimit),
      load: Math.max(leaseRps, completionRps),
      raise: "settings",
      note: `lease requests ${fmt(leaseRps)}/s in the ${leaseWindow} s lead; completions ${inputs.runsPerCompletion} a request: ${fmt(completionRps)}/s over ${drainSeconds} s`,
    },
    {
      component: "Lambda: lease function",
      quota: "reserved concurrency (jobsched:reservedConcurrency; the account's 1,000 above it)",
      limit: Math.min(QUOTAS.lambdaConcurrency, DEFAULT_STACK_LIMITS.reservedConcurrency.internal),
      load: leaseRps * (inputs.leaseHoldMs / 1000) + completionRps * 0.3,
      raise: "settings",
      note: `${fmt(leaseRps)} lease req/s x ${inputs.leaseHoldMs / 1000} s + ${fmt(completionRps)} completion req/s x 300 ms`,
    },
    {
      component: "Lambda: sweeper",
      quota: "maxConcurrency of its event source",
      limit: QUOTAS.sweeperMaxConcurrency,
      load: cohortGroups,
      raise: "settings",
      note: `${cohortGroups} of ${SWEEP_GROUP_COUNT} groups of ${SHARD_COUNT / SWEEP_GROUP_COUNT} shards a tick (each every ${CLOUD_SETTINGS.sweepEveryTicks} ticks); ${fmt(sweepSeconds)} s to fire their ${fmt(cohortRuns)} runs at ${fmt(inputs.sweepRunsPerGroupSecond)} runs/s a group (window ${sweepWindow} s)`,
    },
    {
      component: "SQS: in-flight messages per lane",
      quota: "in flight per standard queue",
      limit: QUOTAS.sqsInFlightPerQueue,
      load: perTenant,
      raise: "quota increase",
      note: `every run of a lane is received before its due second and held until completed; ${fmt(perTenant)} runs a lane`,
    },
    {
      component: "DynamoDB table: writes",
      quota: "on-demand table WRU/s",
      limit: QUOTAS.dynamoTableWru,
      load: Math.max(
        sweepRate * units.sweep,
        (runs * units.lease) / leaseWindow,
        completedRuns * units.completion,
      ),
      raise: "quota increase",
      note: `sweep ${units.sweep} WRU a run at ${fmt(sweepRate)} runs/s; leases ${units.lease} WRU in ${leaseWindow} s; completions ${units.completion} WRU`,
    },
    {
      component: "DynamoDB table: reads",
      quota: "on-demand table RRU/s",
      limit: QUOTAS.dynamoTableRru,
      load: Math.max((runs * units.leaseReads) / leaseWindow, sweepRate * units.sweepReads),
      raise: "quota increase",
      note: `the sweep reads each job's due entry and its block of runs (${units.sweepReads} RRU) at ${fmt(sweepRate)} runs/s; the lease step each run's job (${units.leaseReads} RRU, consistent) in the ${leaseWindow} s lead`,
    },
    {
      component: "DynamoDB: repair-index key",
      quota: `partition WRU/s (${REPAIR_PARTITIONS} keys)`,
      limit: QUOTAS.partitionWru,
      load: 0,
      raise: "design change",
      note: "a firing's run that is not its job's last takes no repair-index entry (decision 0043)",
    },
    {
      component: "DynamoDB: repair-index key, one-off jobs",
      quota: `partition WRU/s (${REPAIR_PARTITIONS} keys)`,
      limit: QUOTAS.partitionWru,
      load: 0,
      raise: "design change",
      note: "a job's last run is carried by its message too; it enters the index only when its job cannot end yet (paused, or a sweep cut short: decision 0045)",
    },
    {
      component: "DynamoDB: tenant-index key",
      quota: "partition WRU/s (one key a tenant)",
      limit: QUOTAS.partitionWru,
      load: 0,
      raise: "design change",
      note: "written at a job's create and status changes only (decision 0041): a recurring job's firing writes none",
    },
    {
      component: "DynamoDB: tenant-index key, one-off jobs",
      quota: "partition WRU/s (one key a tenant)",
      limit: QUOTAS.partitionWru,
      // A job's end changes its status: it writes the index only if the index holds it.
      load: TENANT_INDEX_HOLDS_STATUS ? completedRuns / tenants : 0,
      raise: "design change",
      note: "were the spike's runs one-off jobs, their ends write nothing: a one-off's end is its run's (decision 0057); the index holds keys and type (decision 0047; it held the status, 16.7x)",
    },
    {
      component: "DynamoDB: tenant-index key, creates",
      quota: "partition WRU/s (one key a tenant)",
      limit: QUOTAS.partitionWru,
      load: CLOUD_SETTINGS.tenantCreatesPerSecond,
      raise: "settings",
      note: `a tenant's creates, each one small entry (1 WRU), at most its creates-per-second quota (jobsched:tenantCreatesPerSecond, ${CLOUD_SETTINGS.tenantCreatesPerSecond}); label pointers file under partitions of their own`,
    },
    {
      component: "DynamoDB: due-index shard key",
      quota: `partition WRU/s (${SHARD_COUNT} shards)`,
      limit: QUOTAS.partitionWru,
      load: (2 * sweepRate) / (SHARD_COUNT / CLOUD_SETTINGS.sweepEveryTicks),
      raise: "design change",
      note: "each advance deletes from this hour's shard and puts into the next hour's",
    },
    {
      component: "DynamoDB: a run's or job's own key",
      quota: "partition WRU/s",
      limit: QUOTAS.partitionWru,
      load: 3,
      raise: "design change",
      note: "keys are job ids: at most a few writes each per run",
    },
  ];
  return rows.map((row) => ({ ...row, ratio: row.load / row.limit }));
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : String(Math.round(n * 10) / 10);
}

function main(): void {
  const { values } = parseArgs({
    options: {
      runs: { type: "string" },
      tenants: { type: "string" },
      "job-kb": { type: "string" },
      "drain-seconds": { type: "string" },
      "runs-per-lease": { type: "string" },
      "lease-hold-ms": { type: "string" },
      "runs-per-completion": { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    console.log(
      "usage: npx tsx scripts/capacity-model.ts [--runs 1000000] [--tenants 1] [--job-kb 1] " +
        "[--drain-seconds 60] [--runs-per-lease 50] [--lease-hold-ms 150] [--runs-per-completion 50] [--json]",
    );
    return;
  }
  const number = (text: string | undefined, fallback: number, name: string) => {
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name}: must be a positive number`);
    return value;
  };
  const inputs: SpikeInputs = {
    ...DEFAULT_INPUTS,
    runs: number(values.runs, DEFAULT_INPUTS.runs, "runs"),
    tenants: number(values.tenants, DEFAULT_INPUTS.tenants, "tenants"),
    jobKb: number(values["job-kb"], DEFAULT_INPUTS.jobKb, "job-kb"),
    drainSeconds: number(values["drain-seconds"], DEFAULT_INPUTS.drainSeconds, "drain-seconds"),
    runsPerLease: number(values["runs-per-lease"], DEFAULT_INPUTS.runsPerLease, "runs-per-lease"),
    leaseHoldMs: number(values["lease-hold-ms"], DEFAULT_INPUTS.leaseHoldMs, "lease-hold-ms"),
    runsPerCompletion: number(
      values["runs-per-completion"],
      DEFAULT_INPUTS.runsPerCompletion,
      "runs-per-completion",
    ),
  };
  const rows = capacityModel(inputs);
  if (values.json) {
    console.log(JSON.stringify({ inputs, rows }, null, 2));
    return;
  }
  console.log(
    `spike: ${fmt(inputs.runs)} runs due at one second, ${fmt(inputs.tenants)} tenant(s), ${inputs.jobKb} KB jobs, ` +
      `drained in ${inputs.drainSeconds} s, ${inputs.runsPerLease} runs a lease request held ${inputs.leaseHoldMs} ms`,
  );
  console.log("load / limit  component                            limit                          fix");
  for (const row of [...rows].sort((a, b) => b.ratio - a.ratio)) {
    console.log(
      `${row.ratio.toFixed(2).padStart(12)}  ${row.component.padEnd(36)} ${`${fmt(row.limit)} ${row.quota}`.padEnd(30)} ${row.raise}`,
    );
    console.log(`${" ".repeat(14)}${fmt(row.load)}: ${row.note}`);
  }
  const first = rows
    .filter((r) => r.raise === "quota increase" && r.ratio > 1)
    .sort((a, b) => b.ratio - a.ratio)[0];
  const design = rows.filter((r) => r.raise === "design change" && r.ratio > 1).map((r) => r.component);
  console.log(
    `quota to raise first: ${first ? `${first.component} (${first.quota}), ${first.ratio.toFixed(1)}x over` : "none"}`,
  );
  console.log(`over a limit no quota request lifts: ${design.length > 0 ? design.join("; ") : "none"}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
