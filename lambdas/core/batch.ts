import { MAX_BATCH_ITEMS } from "@jobsched/contract";
import { z } from "zod";
import { type DomainError, ValidationError } from "./errors";

/**
 * One item's outcome in a batched call: its value, or the error it alone met. A failing item
 * never fails the others; the HTTP edge gives each its own status.
 */
export type ItemOutcome<T> =
  | { readonly runId: string; readonly ok: true; readonly value: T }
  | { readonly runId: string; readonly ok: false; readonly error: DomainError | Error };

/** The envelope of a batched call: `{ <key>: [item, ...] }`, 1 to MAX_BATCH_ITEMS items. */
export function batchOf(key: string) {
  return z.strictObject({ [key]: z.array(z.unknown()).min(1).max(MAX_BATCH_ITEMS) });
}

/** Each item's run id, read leniently so that an item with a bad body still names its run. */
export function runIdOf(item: unknown, index: number): string {
  const runId = (item as { runId?: unknown } | null)?.runId;
  return typeof runId === "string" && runId.length > 0 ? runId : `#${index}`;
}

/**
 * Runs `each` for every item, all at once; an item's error is its own outcome. An item
 * without a run id is a ValidationError naming `runId`.
 */
export async function forEachItem<T>(
  items: readonly unknown[],
  each: (runId: string, item: unknown) => Promise<T>,
): Promise<Array<ItemOutcome<T>>> {
  return Promise.all(
    items.map(async (item, index): Promise<ItemOutcome<T>> => {
      const runId = runIdOf(item, index);
      try {
        if (runId.startsWith("#")) throw new ValidationError("runId is required: a string", "runId");
        return { runId, ok: true, value: await each(runId, item) };
      } catch (error) {
        return { runId, ok: false, error: error instanceof Error ? error : new Error(String(error)) };
      }
    }),
  );
}

/** The item without its run id: the body the one-run route takes. */
export function withoutRunId(item: unknown): unknown {
  if (typeof item !== "object" || item === null || Array.isArray(item)) return item;
  const { runId: _runId, ...rest } = item as Record<string, unknown>;
  return rest;
}
