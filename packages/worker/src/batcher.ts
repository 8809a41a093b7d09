/**
 * Collects items for a while and sends them in one call: the worker's completions and
 * heartbeats, so that a busy worker makes one request per batch instead of one per run
 * (decision 0050). Each caller gets its own item's answer.
 */
export interface BatcherOptions<I, A> {
  /** How long the first item of a batch waits for others. */
  readonly windowMs: number;
  /** A batch is sent at once when it has this many items. */
  readonly maxItems: number;
  /** Sends one batch; answers each item, in order (the same length as `items`). */
  readonly send: (items: readonly I[]) => Promise<readonly A[]>;
  /** The clock the deadlines are read on (default Date.now); for tests. */
  readonly now?: () => number;
}

/**
 * Adds an item to the open batch. `latestAt` (epoch ms), when given, is when the item must be
 * on its way at the latest (a lease's end, less a margin): the batch goes then if that is
 * before its window ends. A past `latestAt` sends the batch at once.
 */
export type Batched<I, A> = ((item: I, latestAt?: number) => Promise<A>) & {
  /** Sends the open batch now (a stopping worker's last outcomes). */
  readonly flush: () => void;
};

export function createBatcher<I, A>(options: BatcherOptions<I, A>): Batched<I, A> {
  const now = options.now ?? Date.now;
  let pending: Array<{ item: I; resolve: (answer: A) => void; reject: (error: unknown) => void }> = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** When the open batch is due to go (epoch ms). */
  let goesAt = Number.POSITIVE_INFINITY;

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    goesAt = Number.POSITIVE_INFINITY;
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

  /** Sends the open batch at `at`, unless it is due to go sooner already. */
  const goAt = (at: number) => {
    if (!(at < goesAt)) return;
    goesAt = at;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(flush, Math.max(0, at - now()));
  };

  const add = (item: I, latestAt?: number) =>
    new Promise<A>((resolve, reject) => {
      const first = pending.length === 0;
      pending.push({ item, resolve, reject });
      if (pending.length >= options.maxItems) return flush();
      if (first) goAt(now() + options.windowMs);
      // A latest time that is not a number (an unreadable lease end) sends the batch at once.
      if (latestAt !== undefined) goAt(Number.isFinite(latestAt) ? latestAt : now());
    });
  return Object.assign(add, { flush });
}
