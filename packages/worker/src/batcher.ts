/**
 * Collects items for a few milliseconds and sends them in one call: the worker's completions
 * and heartbeats, so that a busy worker makes one request per batch instead of one per run.
 * Each caller gets its own item's answer.
 */
export interface BatcherOptions<I, A> {
  /** How long the first item of a batch waits for others. */
  readonly windowMs: number;
  /** A batch is sent at once when it has this many items. */
  readonly maxItems: number;
  /** Sends one batch; answers each item, in order (the same length as `items`). */
  readonly send: (items: readonly I[]) => Promise<readonly A[]>;
}

export function createBatcher<I, A>(options: BatcherOptions<I, A>): (item: I) => Promise<A> {
  let pending: Array<{ item: I; resolve: (answer: A) => void; reject: (error: unknown) => void }> = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    if (batch.length === 0) return;
    options.send(batch.map((entry) => entry.item)).then(
      (answers) => {
        batch.forEach((entry, i) => {
          if (i < answers.length) entry.resolve(answers[i] as A);
          else entry.reject(new Error("the batch's answer has no result for this item"));
        });
      },
      (error: unknown) => {
        for (const entry of batch) entry.reject(error);
      },
    );
  };

  return (item) =>
    new Promise<A>((resolve, reject) => {
      pending.push({ item, resolve, reject });
      if (pending.length >= options.maxItems) flush();
      else timer ??= setTimeout(flush, options.windowMs);
    });
}
