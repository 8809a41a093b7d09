import type { CapacityMeter } from "../lambdas/adapters/dynamo/capacity-meter";
import { FUNCTION_MEMORY_MB } from "../lambdas/definitions/functions";
import { MEMORY_GB, PRICE, PROVISIONED_UTILISATION } from "./bench-cost-prices";
import { atMost, reportVerdict } from "./bench-verdict";
import { TYPICAL_LATENCY_MS } from "./emulator-latency";

/** A function's metered invocations and their time: as measured, and at AWS's latencies. */
export interface FunctionMeter {
  invocations: number;
  ms: number;
  awsMs: number;
}

/** What a run mix of `npm run bench:cost` measured, for its report. */
export interface MixMeasurement {
  readonly mix: string;
  readonly push: boolean;
  readonly targetUsd: number;
  /** Runs that completed: the bill is per million of these. */
  readonly runs: number;
  readonly outcomes: { readonly failedOnce: number; readonly heartbeatRuns: number };
  readonly capacity: CapacityMeter;
  readonly lambdas: Record<"api" | "internal" | "sweeper" | "tick" | "dispatcher", FunctionMeter>;
  /** The worker-facing requests by route. */
  readonly workerRoutes: Record<string, number>;
  /** The tenant API's answers by status (a 429 is a create refused by a quota and sent again). */
  readonly tenantAnswers: Record<string, number>;
  readonly calls: {
    /** The handlers' own SQS requests. */
    readonly sqs: Record<string, number>;
    /** The workers' long polls of their lanes (decision 0049). */
    readonly lanes: Record<string, number>;
    /** The sweeper's event source: a fixed cost, printed apart. */
    readonly sweepPolling: Record<string, number>;
    /** The push queue's event source: its deletes are per run. */
    readonly pushPolling: Record<string, number>;
  };
}

/**
 * Prints a run mix's bill per million runs, line by line (Lambda time at AWS latencies, and as
 * measured beside it), and its verdict against the mix's target; returns the exit code.
 */
export function reportMix(measured: MixMeasurement): number {
  const { mix, push, targetUsd, runs, outcomes, capacity, lambdas, workerRoutes, tenantAnswers, calls } =
    measured;
  const pushBatches = lambdas.dispatcher.invocations + (calls.pushPolling.DeleteMessageBatch ?? 0);
  // The workers' own long polls of their lanes (decision 0049) are SQS requests too.
  const sqsTotal =
    [calls.sqs, calls.lanes].flatMap((calls) => Object.values(calls)).reduce((s, n) => s + n, 0) +
    pushBatches;
  const api = lambdas.api.invocations + lambdas.internal.invocations;
  const invocations =
    api + lambdas.sweeper.invocations + lambdas.tick.invocations + lambdas.dispatcher.invocations;
  /** GB-seconds of each function, from its measured time or its time at AWS's latencies. */
  const gbSecondsOf = (time: "ms" | "awsMs") =>
    Object.fromEntries(
      (["api", "internal", "sweeper", "dispatcher"] as const).map((name) => [
        name,
        (lambdas[name][time] * MEMORY_GB[name]) / 1000,
      ]),
    ) as Record<keyof typeof MEMORY_GB, number>;
  const sum = (values: Record<string, number>) => Object.values(values).reduce((s, n) => s + n, 0);
  const gbSecondsByFunction = gbSecondsOf("ms");
  const awsGbSecondsByFunction = gbSecondsOf("awsMs");
  const gbSeconds = sum(gbSecondsByFunction);
  const awsGbSeconds = sum(awsGbSecondsByFunction);
  const perMillion = (total: number) => (total / runs) * 1e6;
  const GB_SECONDS_LINE = `Lambda GB-seconds (arm64, ${FUNCTION_MEMORY_MB.internal}-${FUNCTION_MEMORY_MB.api} MB)`;
  /** The bill at AWS's latencies: the functions' time with each emulator wait restated. */
  const cost = {
    "DynamoDB writes (on-demand)": perMillion(capacity.writes()) * PRICE.dynamoWriteUnit,
    "DynamoDB reads (on-demand)": perMillion(capacity.reads()) * PRICE.dynamoReadUnit,
    "SQS requests": perMillion(sqsTotal) * PRICE.sqsRequest,
    "HTTP API requests": perMillion(api) * PRICE.httpApiRequest,
    "Lambda requests": perMillion(invocations) * PRICE.lambdaRequest,
    [GB_SECONDS_LINE]: perMillion(awsGbSeconds) * PRICE.lambdaGbSecondArm,
  };
  const total = sum(cost);
  /** The same with the functions' time as measured here: an upper bound. */
  const measuredGbSecondsCost = perMillion(gbSeconds) * PRICE.lambdaGbSecondArm;
  const measuredTotal = total - (cost[GB_SECONDS_LINE] ?? 0) + measuredGbSecondsCost;
  const provisioned = {
    writes: (perMillion(capacity.writes()) * PRICE.dynamoWcuHour) / 3600 / PROVISIONED_UTILISATION,
    reads: (perMillion(capacity.reads()) * PRICE.dynamoRcuHour) / 3600 / PROVISIONED_UTILISATION,
  };
  const onDemandDynamo = cost["DynamoDB writes (on-demand)"] + cost["DynamoDB reads (on-demand)"];
  const provisionedTotal = total - onDemandDynamo + provisioned.writes + provisioned.reads;

  console.log(`machine: ${process.platform} ${process.arch}, Node ${process.version}`);
  console.log(
    `runs completed: ${runs} (${outcomes.failedOnce} failed once and were retried, ${outcomes.heartbeatRuns} heartbeat runs)`,
  );
  console.log(
    `DynamoDB: ${capacity.writes().toFixed(0)} write units (${capacity.indexWrites().toFixed(0)} of them index entries, by DynamoDB's rules), ${capacity.reads().toFixed(0)} read units`,
  );
  console.log(`  calls: ${JSON.stringify(capacity.calls())}`);
  console.log(
    `SQS: ${sqsTotal} requests ${JSON.stringify(calls.sqs)}, workers' lane polls ${JSON.stringify(calls.lanes)}${push ? ` + push event source: ${lambdas.dispatcher.invocations} non-empty receives, ${calls.pushPolling.DeleteMessageBatch ?? 0} deletes` : ""}`,
  );
  console.log(
    `  (sweep queue polling by the event source, fixed cost, not counted per run: ${JSON.stringify(calls.sweepPolling)})`,
  );
  console.log(
    `API: ${api} requests (${lambdas.api.invocations} tenant, answered ${JSON.stringify(tenantAnswers)}; ${lambdas.internal.invocations} worker: ${JSON.stringify(workerRoutes)}); ` +
      `Lambda: ${invocations} invocations (${lambdas.sweeper.invocations} sweeper, ${lambdas.tick.invocations} tick, ${lambdas.dispatcher.invocations} dispatcher), ` +
      `${gbSeconds.toFixed(1)} GB-s as measured (upper bound), ${awsGbSeconds.toFixed(1)} GB-s at AWS latencies`,
  );
  // The GB-seconds vary from run to run: which function they come from says why.
  const byFunction = (values: Record<string, number>) =>
    Object.entries(values)
      .map(([name, gbs]) => `${name} ${gbs.toFixed(1)}`)
      .join(", ");
  console.log(`GB-s by function, as measured: ${byFunction(gbSecondsByFunction)}`);
  console.log(
    `GB-s by function, each emulator wait at AWS's typical latency (DynamoDB ${TYPICAL_LATENCY_MS.dynamodb} ms, ` +
      `SQS ${TYPICAL_LATENCY_MS.sqs} ms a request; scripts/emulator-latency.ts): ${byFunction(awsGbSecondsByFunction)}`,
  );
  console.log(
    `per run: ${(capacity.writes() / runs).toFixed(2)} WRU, ${(capacity.reads() / runs).toFixed(2)} RRU, ${(sqsTotal / runs).toFixed(2)} SQS requests, ${(api / runs).toFixed(2)} API requests`,
  );
  console.log("cost per million runs at on-demand list prices (Lambda time at AWS latencies):");
  for (const [name, usd] of Object.entries(cost)) console.log(`  ${name.padEnd(36)} $${usd.toFixed(2)}`);
  console.log(`  ${"total".padEnd(36)} $${total.toFixed(2)}`);
  console.log(
    `  with the Lambda time as measured here (an upper bound): GB-seconds $${measuredGbSecondsCost.toFixed(2)}, total $${measuredTotal.toFixed(2)}`,
  );
  console.log(
    `with provisioned DynamoDB capacity at ${PROVISIONED_UTILISATION * 100}% utilisation: writes $${provisioned.writes.toFixed(2)}, ` +
      `reads $${provisioned.reads.toFixed(2)}, total $${provisionedTotal.toFixed(2)}`,
  );
  return reportVerdict([
    atMost(
      `total per million runs on-demand (Lambda time at AWS latencies), ${mix} mix, USD`,
      total,
      targetUsd,
      (n) => `$${n.toFixed(2)}`,
    ),
  ]);
}
