import type { CreateJobsItemResponse, CreateJobsResponse } from "@jobsched/contract";

/** How often a batch's items refused by a quota (429) are sent again before their 429 stands. */
const QUOTA_ROUNDS = 10;

/**
 * Sends up to 100 create bodies as one bulk create (POST /api/v1/jobs/batch) and sends the
 * items a tenant quota refused (429: nothing was stored) again after their `retryAfter`, so a
 * large import keeps to the creates-per-second quota by itself. Returns a result per body, in
 * order, its `index` the body's.
 */
export async function createBatch(
  send: (jobs: readonly unknown[]) => Promise<CreateJobsResponse>,
  jobs: readonly unknown[],
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((done) => setTimeout(done, ms)),
): Promise<CreateJobsItemResponse[]> {
  const results: CreateJobsItemResponse[] = new Array(jobs.length);
  let pending = jobs.map((_, i) => i);
  for (let round = 1; pending.length > 0; round++) {
    const answer = await send(pending.map((i) => jobs[i]));
    const again: number[] = [];
    let waitSeconds = 0;
    for (const item of answer.results) {
      const index = pending[item.index];
      if (index === undefined) continue;
      results[index] = { ...item, index };
      if (item.status === 429 && round < QUOTA_ROUNDS) {
        again.push(index);
        waitSeconds = Math.max(waitSeconds, item.retryAfter ?? 1);
      }
    }
    pending = again;
    if (pending.length > 0) await sleep(waitSeconds * 1000);
  }
  return results;
}
