import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { DomainError } from "../errors";
import type { RandomBytes } from "../ids";
import { createJobsRequest } from "../schemas";
import { parseWith } from "../validation";
import { type CreateJobResult, createJob } from "./create-job";

/** Items created at once: a batch's creates share the tenant's creates-per-second quota. */
const CONCURRENT_CREATES = 10;

/** What became of one item of a batch: created (or found, idempotent), or refused with why. */
export type BatchItemOutcome =
  | { readonly index: number; readonly result: CreateJobResult }
  | { readonly index: number; readonly error: DomainError }
  /** Not the item's fault (a store failure): the item may be sent again. */
  | { readonly index: number; readonly failure: unknown };

/**
 * POST /api/v1/jobs/batch (bulk create, as BullMQ's addBulk or pg-boss's insert): each item
 * goes through the one-job create, with its own validation, quotas and idempotency, so an
 * item's refusal or failure is that item's answer and never another's. A batch idempotency
 * key gives each item without a key of its own `<key>#<index>`: the same batch sent again
 * finds every job it created and creates none.
 */
export async function createJobs(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
  body: unknown,
): Promise<BatchItemOutcome[]> {
  const request = parseWith(createJobsRequest, body);
  const items = request.jobs.map((item, index) => withBatchKey(item, index, request.idempotencyKey));
  const outcomes: BatchItemOutcome[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < items.length; index = next++) {
      outcomes[index] = await createOne(deps, caller, items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT_CREATES, items.length) }, worker));
  return outcomes;
}

async function createOne(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
  item: unknown,
  index: number,
): Promise<BatchItemOutcome> {
  try {
    return { index, result: await createJob(deps, caller, item) };
  } catch (error) {
    if (error instanceof DomainError) return { index, error };
    deps.log.error("a batch item's create failed", { index, error: String(error) });
    return { index, failure: error };
  }
}

function withBatchKey(item: unknown, index: number, batchKey: string | undefined): unknown {
  if (batchKey === undefined || typeof item !== "object" || item === null || Array.isArray(item)) return item;
  if ("idempotencyKey" in item) return item;
  return { ...item, idempotencyKey: `${batchKey}#${index}` };
}
