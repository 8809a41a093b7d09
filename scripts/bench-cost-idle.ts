import { bucketOf, SHARD_COUNT } from "../lambdas/core/keys";
import { CURSOR_SAFETY_MS } from "../lambdas/core/use-cases/sweep-group";
import { CLOUD_SETTINGS } from "../lambdas/definitions/settings";
import { ESM_POLLERS, ESM_QUEUES, MEMORY_GB, PRICE } from "./bench-cost-prices";

/**
 * A sweep reads every hourly bucket from its cursor (now less CURSOR_SAFETY_MS) to its horizon
 * (now plus the lookahead): two buckets for the 2 minutes after an hour's turn and the
 * lookahead before it, one otherwise. An idle window of 10 ticks holds anywhere from 0 to 7 of
 * those two-bucket ticks (a run across 13:00 read 8,086 units, one at 12:45 5,529, when every
 * tick swept every group), while a month holds them in this share.
 */
export const TWO_BUCKET_SHARE = (CURSOR_SAFETY_MS + CLOUD_SETTINGS.lookaheadSeconds * 1000) / 3_600_000;
/**
 * An empty Query's price (DynamoDB's minimum, eventually consistent), per shard of a bucket a
 * tick reads: its groups' shards (each group every sweepEveryTicks ticks, decision 0056).
 */
const BUCKET_READ_UNITS = (SHARD_COUNT / CLOUD_SETTINGS.sweepEveryTicks) * 0.5;

/** Whether a tick at `at` has its sweep read two hourly buckets. */
export function readsTwoBuckets(at: number, lookaheadSeconds: number): boolean {
  return bucketOf(at + lookaheadSeconds * 1000) !== bucketOf(at - CURSOR_SAFETY_MS);
}

import { atMost, reportVerdict } from "./bench-verdict";

/**
 * An idle deployment's month, by component, from `ticks` minutes of it measured here (scaled by
 * the 43,200 ticks of a 30-day month). The tick fires every minute whether or not anything is
 * stored; each tick's sweep queries the shards of the groups whose turn it is (read units) on
 * the sweeper; the event sources
 * (the sweep and push queues) are polled by AWS whether or not messages come, which the local
 * event source does not imitate, so that line is modelled (ESM_POLLERS); idle workers long-poll
 * their own lanes in SQS (decision 0049: `laneCalls`, counted on the SDK's SQS clients) and ask
 * for leases only when one rings and every 5 minutes besides; those lease and lanes requests are
 * API requests, function invocations and function time.
 */
export function reportIdle(
  ticks: number,
  measured: {
    readonly lambdas: Record<keyof typeof MEMORY_GB, { invocations: number; ms: number; awsMs: number }>;
    readonly sqsCalls: Record<string, number>;
    /** The workers' own requests to their lanes (decision 0049). */
    readonly laneCalls: Record<string, number>;
    readonly capacity: { reads(): number; writes(): number };
    readonly workerCount: number;
    readonly targetUsd: number;
    /** Measured ticks whose sweep read two hourly buckets. */
    readonly twoBucketTicks: number;
  },
): void {
  const { lambdas, sqsCalls, laneCalls, capacity, workerCount, targetUsd, twoBucketTicks } = measured;
  // The window's share of two-bucket ticks replaced by the month's: each is one more empty
  // query of every shard (the measured reads, as DynamoDB counts them, otherwise stand).
  const monthReads = capacity.reads() + (ticks * TWO_BUCKET_SHARE - twoBucketTicks) * BUCKET_READ_UNITS;
  const month = 43_200 / ticks;
  const gbs = (name: keyof typeof MEMORY_GB) => (lambdas[name].awsMs * MEMORY_GB[name]) / 1000;
  const sqsOf = (pattern: RegExp) =>
    Object.entries(sqsCalls)
      .filter(([name]) => pattern.test(name))
      .reduce((sum, [, n]) => sum + n, 0);
  const leaseSqs = sqsOf(/^(Receive|ChangeMessageVisibility|DeleteMessage)/);
  const tickSqs = sqsOf(/.*/) - leaseSqs;
  const lambdaCost = (name: keyof typeof MEMORY_GB) =>
    month * (lambdas[name].invocations * PRICE.lambdaRequest + gbs(name) * PRICE.lambdaGbSecondArm);
  const components = {
    "tick: Lambda requests and GB-s (EventBridge's scheduled rule is free)": lambdaCost("tick"),
    "sweep: Lambda requests and GB-s": lambdaCost("sweeper"),
    [`DynamoDB reads (sweep and repair queries, lease lookups; two-bucket sweeps at the month's ${(TWO_BUCKET_SHARE * 100).toFixed(1)}%)`]:
      monthReads * month * PRICE.dynamoReadUnit,
    "DynamoDB writes (the tick's ahead ledger, sweep cursors)":
      capacity.writes() * month * PRICE.dynamoWriteUnit,
    "SQS: the tick's sends to the sweep queue": tickSqs * month * PRICE.sqsRequest,
    [`SQS: event source polling (modelled: ${ESM_POLLERS} pollers x ${ESM_QUEUES} queues, 20 s long polls)`]:
      ESM_POLLERS * ESM_QUEUES * ((30 * 86_400) / 20) * PRICE.sqsRequest,
    "workers: long polls of their own lanes in SQS (20 s each)":
      Object.values(laneCalls).reduce((sum, n) => sum + n, 0) * month * PRICE.sqsRequest,
    "workers' lease and lanes requests: HTTP API":
      lambdas.internal.invocations * month * PRICE.httpApiRequest,
    "workers' lease and lanes requests: Lambda requests and GB-s": lambdaCost("internal"),
    "workers' lease requests: the lease step's receives": leaseSqs * month * PRICE.sqsRequest,
  };
  const total = Object.values(components).reduce((sum, usd) => sum + usd, 0);
  console.log(`machine: ${process.platform} ${process.arch}, Node ${process.version}`);
  console.log(
    `idle for ${ticks} ticks (a minute each) with ${workerCount} idle workers: ${lambdas.internal.invocations} lease and lanes requests ` +
      `(${(lambdas.internal.awsMs / Math.max(1, lambdas.internal.invocations)).toFixed(0)} ms each at AWS latencies), ` +
      `${lambdas.sweeper.invocations} sweeper invocations, ${capacity.reads().toFixed(0)} RRU (${twoBucketTicks} of ${ticks} ticks read two hourly buckets; ${monthReads.toFixed(0)} at the month's share), ${capacity.writes().toFixed(0)} WRU, ` +
      `SQS ${JSON.stringify(sqsCalls)}, workers' own lane polls ${JSON.stringify(laneCalls)}`,
  );
  console.log(
    "cost a month (43,200 ticks) at the defaults, on-demand list prices (Lambda time at AWS latencies):",
  );
  for (const [name, usd] of Object.entries(components))
    console.log(`  ${name.padEnd(84)} $${usd.toFixed(2)}`);
  console.log(`  ${"total".padEnd(84)} $${total.toFixed(2)}`);
  reportVerdict([
    atMost(
      `idle deployment a month, ${workerCount} idle workers, USD`,
      total,
      targetUsd,
      (n) => `$${n.toFixed(2)}`,
    ),
  ]);
}
