import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { createDynamoClient } from "../lambdas/adapters/clients";
import { meterCapacity } from "../lambdas/adapters/dynamo/capacity-meter";
import { toJobItem } from "../lambdas/adapters/dynamo/job-item";
import type { RuntimeConfig } from "../lambdas/adapters/environment";
import type { WorkerCaller } from "../lambdas/core/caller";
import type { SchedulerDeps } from "../lambdas/core/deps";
import type { Job } from "../lambdas/core/job";
import { completeRuns } from "../lambdas/core/use-cases/complete-runs";
import { type SweepStats, sweepGroup } from "../lambdas/core/use-cases/sweep-group";
import { CLOUD_SETTINGS, LOCAL_SETTINGS, type SchedulerSettings } from "../lambdas/definitions/settings";
import { JOBS_TABLE } from "../lambdas/definitions/table";
import { bootstrapStack } from "../local/bootstrap";
import { startEmulatorProcess } from "../local/emulator-process";
import { startDynamo, startSqs } from "../local/emulators";
import { createBatcher } from "../packages/worker/src/batcher";
import { oneOffJob as buildJob } from "../test/support/jobs";
import { handOutSlices } from "../test/support/tick-sweeps";

/** Helpers the benchmark scripts share: bulk job creation and percentiles. */
export function oneOffJob(runAt: number, now: number, type = "bench", tenant = "bench-tenant"): Job {
  return buildJob(runAt, now, { type, tenant, requestHash: "bench", createdBy: "bench" });
}

/** Writes jobs 25 at a time, several batches in flight, retrying unprocessed items. */
export async function putJobs(
  db: DynamoDBDocumentClient,
  tableName: string,
  jobs: readonly Job[],
): Promise<void> {
  const batches: Job[][] = [];
  for (let i = 0; i < jobs.length; i += 25) batches.push(jobs.slice(i, i + 25));
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < batches.length) {
        const batch = batches[next++] ?? [];
        let requests = batch.map((job) => ({ PutRequest: { Item: toJobItem(job) } }));
        while (requests.length > 0) {
          const result = await db.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
          requests = (result.UnprocessedItems?.[tableName] ?? []) as typeof requests;
        }
      }
    }),
  );
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/**
 * Waits for the first tick whose horizon covers `dueAt` (lookahead less 5 s before it; in AWS a
 * second is first seen 30 to 150 s ahead), sweeps every shard group as that tick would, and says
 * how long it took. The earliest tick is taken because this one process sweeps what 32 sweeper
 * Lambdas sweep side by side in AWS: 10,000 runs take it about a minute.
 */
export async function tickAhead(deps: SchedulerDeps, dueAt: number): Promise<void> {
  const ahead = (deps.settings.lookaheadSeconds - 5) * 1000;
  await new Promise((done) => setTimeout(done, Math.max(0, dueAt - ahead - Date.now())));
  const started = Date.now();
  const sweeps = await sweepEveryGroup(deps);
  const created = sweeps.reduce((sum, sweep) => sum + sweep.runsCreated, 0);
  console.log(
    `tick ${((dueAt - started) / 1000).toFixed(0)} s ahead: ${created} runs created and enqueued in ${Date.now() - started} ms (${((dueAt - Date.now()) / 1000).toFixed(1)} s before the second)`,
  );
}

/**
 * A tick of every group, as the deployment's ticks and sweepers make it: the slices of the
 * one-offs made ahead handed out and recorded (decision 0059), then every group swept at once,
 * as 32 sweeper Lambdas sweep side by side.
 */
export async function sweepEveryGroup(deps: SchedulerDeps): Promise<SweepStats[]> {
  const messages = await handOutSlices(deps);
  return Promise.all(messages.map((m) => sweepGroup(deps, m.group, m.ahead)));
}

/**
 * The emulators (in processes of their own unless `sameProcess`, as `npm start` keeps them)
 * with the table and queues bootstrapped on them, for CLOUD_SETTINGS unless told otherwise,
 * with the lease rate the emulators grant on this machine (LOCAL_SETTINGS.leasesPerSecond):
 * the lead of a dense second is planned for what this machine can lease, not for AWS.
 */
export async function startBenchStack(
  tableName: string,
  options: { readonly sameProcess?: boolean; readonly settings?: SchedulerSettings } = {},
) {
  const dynamo = options.sameProcess ? await startDynamo() : await startEmulatorProcess("dynamodb");
  const sqs = options.sameProcess ? await startSqs() : await startEmulatorProcess("sqs");
  const config = await bootstrapStack({
    dynamodbEndpoint: dynamo.endpoint,
    sqsEndpoint: sqs.endpoint,
    tableName,
    settings: options.settings ?? { ...CLOUD_SETTINGS, leasesPerSecond: LOCAL_SETTINGS.leasesPerSecond },
  });
  return {
    config,
    async close() {
      await sqs.close();
      await dynamo.close();
    },
  };
}

/**
 * A worker's completions as the SDK sends them: batched within 5 ms, up to 100 a call, through
 * the use case behind POST /internal/completions. `onBatch` is told when a batch is recorded.
 */
export function completionBatcher(deps: SchedulerDeps, worker: WorkerCaller, onBatch: () => void) {
  return createBatcher<{ runId: string; fence: number; final?: boolean; result: "succeeded" }, unknown>({
    windowMs: 5,
    maxItems: 100,
    send: async (items) => {
      const outcomes = await completeRuns(deps, worker, { completions: items });
      onBatch();
      return outcomes;
    },
  });
}

/**
 * The stack's table through a metered client: write units by DynamoDB's rules, indexes included
 * (dynalite counts the table's only). Each write's item is read before and after on a client of
 * its own, which is not counted. `db` is the document client the adapters take.
 */
export function meteredTable(config: RuntimeConfig) {
  const dynamoClient = createDynamoClient(config);
  const imageClient = createDynamoClient(config);
  const capacity = meterCapacity(dynamoClient, {
    table: JOBS_TABLE,
    read: async (key) =>
      (
        await imageClient.send(
          new GetItemCommand({ TableName: config.tableName, Key: key, ConsistentRead: true }),
        )
      ).Item,
  });
  const db = DynamoDBDocumentClient.from(dynamoClient, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return { dynamoClient, capacity, db };
}
