import type { CreateJobsItemResponse, CreateJobsResponse } from "@jobsched/contract";

/** Items a batch carries: the API's limit. */
export const BATCH_JOBS = 100;
/** A batch's body stays under the API's 4 MiB, with room for the envelope. */
export const BATCH_BYTES = 3.5 * 1024 * 1024;

/** Rounds in a row in which every item sent was refused again, before their 429s stand. */
const STALLED_ROUNDS = 5;

/** The one refusal that waiting clears: the creates-per-second quota (not active jobs, not types). */
const isRateRefusal = (item: CreateJobsItemResponse) =>
  item.status === 429 && item.error?.field?.endsWith(".quota.createsPerSecond") === true;

/**
 * Sends up to 100 create bodies as one bulk create (POST /api/v1/jobs/batch) and sends the
 * items the creates-per-second quota refused (nothing of them was stored) again after their
 * `retryAfter`, for as long as the rounds make progress, so a large import keeps to the quota
 * by itself. Returns a result per body, in order, its index (and error's `jobs.<index>`) the
 * body's; a body the answer left out is a 500 of its own.
 */
export async function createBatch(
  send: (jobs: readonly unknown[]) => Promise<CreateJobsResponse>,
  jobs: readonly unknown[],
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((done) => setTimeout(done, ms)),
): Promise<CreateJobsItemResponse[]> {
  const results: CreateJobsItemResponse[] = jobs.map((_, index) => ({
    index,
    status: 500,
    error: { code: "NoAnswer", message: `jobs.${index}: the answer did not include this item` },
  }));
  let pending = jobs.map((_, i) => i);
  let stalled = 0;
  while (pending.length > 0) {
    const answer = await send(pending.map((i) => jobs[i]));
    const again: number[] = [];
    let waitSeconds = 0;
    for (const item of answer.results) {
      const index = pending[item.index];
      if (index === undefined) continue;
      results[index] = renumbered(item, index);
      if (isRateRefusal(item)) {
        again.push(index);
        waitSeconds = Math.max(waitSeconds, item.retryAfter ?? 1);
      }
    }
    stalled = again.length === pending.length ? stalled + 1 : 0;
    pending = stalled >= STALLED_ROUNDS ? [] : again;
    if (pending.length > 0) await sleep(waitSeconds * 1000);
  }
  return results;
}

/** An item answered in a resent subset, with its place in the whole batch. */
function renumbered(item: CreateJobsItemResponse, index: number): CreateJobsItemResponse {
  if (!item.error) return { ...item, index };
  const at = (text: string) => text.replace(/^jobs\.\d+/, `jobs.${index}`);
  const { field, message } = item.error;
  return {
    ...item,
    index,
    error: { ...item.error, message: at(message), ...(field ? { field: at(field) } : {}) },
  };
}

/** Batches of at most BATCH_JOBS items and BATCH_BYTES of JSON, in order. */
export function batchesOf<T extends { readonly bytes: number }>(items: readonly T[]): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length === BATCH_JOBS || (current.length > 0 && bytes + item.bytes > BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.bytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
