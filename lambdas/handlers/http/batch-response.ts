import type { CreateJobsItemResponse, CreateJobsResponse } from "@jobsched/contract";
import { QuotaExceededError } from "../../core/errors";
import { excerpt } from "../../core/excerpt";
import type { BatchItemOutcome } from "../../core/use-cases/create-jobs";
import { statusOf } from "./error-middleware";

/**
 * A bulk create's answer: a result per item, in the request's order, with the status the item
 * would have had alone. A refusal's field names the item and its field (`jobs.3.runAt`).
 */
export function batchResponse(outcomes: readonly BatchItemOutcome[]): CreateJobsResponse {
  const results = outcomes.map(itemResponse);
  const count = (ok: (status: number) => boolean) => results.filter((r) => ok(r.status)).length;
  return {
    created: count((s) => s === 201),
    existing: count((s) => s === 200),
    failed: count((s) => s >= 400),
    results,
  };
}

/**
 * An item's error message and field are cut to these lengths: they can echo the client's own
 * keys (64 KiB each), and 100 such items must not pass Lambda's 6 MB response. The worst answer
 * is then about 100 x 1.5 KiB.
 */
export const MAX_ITEM_MESSAGE_CHARS = 1_024;
export const MAX_ITEM_FIELD_CHARS = 256;

function itemResponse(outcome: BatchItemOutcome): CreateJobsItemResponse {
  const { index } = outcome;
  if ("result" in outcome) {
    const { result } = outcome;
    return {
      index,
      status: result.created ? 201 : 200,
      jobId: result.jobId,
      ...(result.nextRunAt === undefined ? {} : { nextRunAt: result.nextRunAt }),
    };
  }
  if ("error" in outcome) {
    const status = statusOf(outcome.error);
    // A 5xx-mapped domain error leaks nothing, as the one-job route's answer does.
    if (status < 500) {
      const { code, message, field: inner } = outcome.error;
      // The item's own body is `jobs.<index>`; its fields are under it.
      const field = inner === undefined || inner === "body" ? `jobs.${index}` : `jobs.${index}.${inner}`;
      const said =
        inner !== undefined && message.startsWith(`${inner}: `) ? message.slice(inner.length + 2) : message;
      const retryAfter =
        outcome.error instanceof QuotaExceededError ? outcome.error.retryAfterSeconds : undefined;
      return {
        index,
        status,
        error: {
          code,
          message: excerpt(`${field}: ${said}`, MAX_ITEM_MESSAGE_CHARS),
          field: excerpt(field, MAX_ITEM_FIELD_CHARS),
        },
        ...(retryAfter === undefined ? {} : { retryAfter }),
      };
    }
  }
  return {
    index,
    status: 500,
    error: { code: "InternalError", message: `jobs.${index}: internal error; send this item again` },
  };
}
