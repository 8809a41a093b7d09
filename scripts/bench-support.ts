import { BatchWriteCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { toJobItem } from "../lambdas/adapters/dynamo/job-item";
import type { Job } from "../lambdas/core/job";
import { oneOffJob as buildJob } from "../test/support/jobs";

/** Helpers the benchmark scripts share: bulk job creation and percentiles. */
export function oneOffJob(runAt: number, now: number, type = "bench"): Job {
  return buildJob(runAt, now, { type, tenant: "bench-tenant", requestHash: "bench", createdBy: "bench" });
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
