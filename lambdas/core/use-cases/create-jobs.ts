import { createHash } from "node:crypto";
import { createJobsRequest, documentProblem } from "@jobsched/contract";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { DomainError, IdempotencyConflictError, ValidationError } from "../errors";
import type { RandomBytes } from "../ids";
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
  // The edge left the document rules to this use case: the envelope's here, each item's in
  // createOne, so one item's bad value is that item's 400, never the batch's.
  const envelope = documentProblem({ ...request, jobs: [] }, 0);
  if (envelope)
    throw new ValidationError(`${envelope.path.join(".")}: ${envelope.message}`, envelope.path.join("."));
  const items = request.jobs.map((item, index) => withBatchKey(item, index, request.idempotencyKey));
  const outcomes: BatchItemOutcome[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < items.length; index = next++) {
      outcomes[index] = await createOne(deps, caller, items[index] as BatchItem, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT_CREATES, items.length) }, worker));
  return outcomes;
}

async function createOne(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
  item: BatchItem,
  index: number,
): Promise<BatchItemOutcome> {
  try {
    const problem = documentProblem(item.body, 0);
    if (problem) {
      const field = problem.path.length === 0 ? "body" : problem.path.join(".");
      throw new ValidationError(`${field}: ${problem.message}`, field);
    }
    return { index, result: await createJob(deps, caller, item.body) };
  } catch (error) {
    if (error instanceof IdempotencyConflictError && item.derivedKey)
      return {
        index,
        error: new IdempotencyConflictError(
          "idempotencyKey: the batch's key was used before for a batch whose item at this place differs; a batch key stands for the whole batch: send it again unchanged, or use a new key (or give the item a key of its own)",
          "idempotencyKey",
        ),
      };
    if (error instanceof DomainError) return { index, error };
    deps.log.error("a batch item's create failed", { index, error: String(error) });
    return { index, failure: error };
  }
}

/** An item's create body, and whether its idempotency key came from the batch's. */
interface BatchItem {
  readonly body: unknown;
  readonly derivedKey: boolean;
}

/**
 * The key a batch key gives its item at `index`. A digest of the batch key, so it cannot equal
 * by accident a key a client chose for a single create (`order#0` beside a batch key `order`).
 */
export function batchItemKey(batchKey: string, index: number): string {
  const digest = createHash("sha256").update(batchKey).digest("base64url");
  return `batch:${digest}#${index}`;
}

function withBatchKey(item: unknown, index: number, batchKey: string | undefined): BatchItem {
  if (batchKey === undefined || typeof item !== "object" || item === null || Array.isArray(item))
    return { body: item, derivedKey: false };
  if ("idempotencyKey" in item) return { body: item, derivedKey: false };
  return { body: { ...item, idempotencyKey: batchItemKey(batchKey, index) }, derivedKey: true };
}
