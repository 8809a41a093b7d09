import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Lambda time as AWS would bill it, from time measured against the emulators. A function here
 * waits on dynalite and fauxqs, which answer far slower than DynamoDB and SQS (tens to hundreds
 * of milliseconds on this shared 2-core machine against single-digit milliseconds), so measured
 * GB-seconds are an upper bound. Each SDK call made inside an invocation is timed; the time the
 * invocation spent waiting on the emulators (the union of its calls' intervals) is taken out
 * and each stretch of overlapping calls is put back at the service's typical latency.
 *
 * Typical latencies, the figures AWS publishes:
 * - DynamoDB, 5 ms a request: "consistent single-digit millisecond performance at any scale"
 *   (Amazon DynamoDB product page and developer guide, "What is Amazon DynamoDB?"); 5 ms is the
 *   middle of that range; batch and query requests alike.
 * - SQS, 20 ms a request: "typical latencies for SendMessage, ReceiveMessage, and DeleteMessage
 *   API requests are in the tens or low hundreds of milliseconds" (Amazon SQS developer guide,
 *   "Amazon SQS quotas" / FAQ); 20 ms is the low end. A long poll that waited for messages
 *   (WaitTimeSeconds > 0) keeps its measured time: in AWS it waits for the messages too.
 */
export const TYPICAL_LATENCY_MS = { dynamodb: 5, sqs: 20 } as const;
export type Service = keyof typeof TYPICAL_LATENCY_MS;

/** One SDK call: when it ran, and what it would take in AWS (its measured time for a long poll). */
export interface TimedCall {
  readonly start: number;
  readonly end: number;
  readonly awsMs: number;
}

/**
 * The time an invocation of `durationMs` (from `start`) would take in AWS: the union of its
 * calls' intervals (clipped to the invocation) replaced, stretch by stretch, by the AWS latency
 * of the calls in it times the calls that had to follow one another: a stretch where a call
 * began after another ended (a query's next page, an update after a read) waits at least that
 * many round trips, overlapping calls wait together.
 */
export function awsEquivalentMs(start: number, durationMs: number, calls: readonly TimedCall[]): number {
  const end = start + durationMs;
  const clipped = calls
    .map((c) => ({ start: Math.max(start, c.start), end: Math.min(end, c.end), awsMs: c.awsMs }))
    .filter((c) => c.end > c.start)
    .sort((a, b) => a.start - b.start);
  let waited = 0;
  let replaced = 0;
  let stretch: { start: number; end: number; calls: TimedCall[] } | undefined;
  const close = () => {
    if (!stretch) return;
    waited += stretch.end - stretch.start;
    replaced += Math.min(roundTripsMs(stretch.calls), stretch.end - stretch.start);
  };
  for (const call of clipped) {
    if (stretch && call.start <= stretch.end) {
      stretch.end = Math.max(stretch.end, call.end);
      stretch.calls.push(call);
      continue;
    }
    close();
    stretch = { start: call.start, end: call.end, calls: [call] };
  }
  close();
  return durationMs - waited + replaced;
}

/**
 * The least time a stretch of calls takes at AWS's latencies: the heaviest chain of calls each
 * beginning after the one before it ended (calls that cannot have overlapped, so waited one
 * after another), each at its AWS latency. Weighted interval scheduling over the calls sorted
 * by their ends.
 */
function roundTripsMs(calls: readonly TimedCall[]): number {
  const sorted = [...calls].sort((a, b) => a.end - b.end);
  const best: number[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const call = sorted[i] as TimedCall;
    // The last call that ended before this one began (binary search over the ends).
    let low = 0;
    let high = i - 1;
    let before = -1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if ((sorted[middle] as TimedCall).end <= call.start) {
        before = middle;
        low = middle + 1;
      } else high = middle - 1;
    }
    const withIt = call.awsMs + (before >= 0 ? (best[before] as number) : 0);
    best.push(Math.max(withIt, i > 0 ? (best[i - 1] as number) : 0));
  }
  return best.at(-1) ?? 0;
}

interface Invocation {
  readonly calls: TimedCall[];
}

/** Middleware-capable SDK client (the DynamoDB and SQS clients). */
interface WithMiddleware {
  readonly middlewareStack: {
    add(
      middleware: (
        next: (args: { input: object }) => Promise<unknown>,
      ) => (args: { input: object }) => Promise<unknown>,
      options: { step: "initialize"; name: string },
    ): void;
  };
}

/**
 * Times the SDK calls each invocation makes: `time(client, service)` on every client the
 * handlers use, then `invoke(handler)` around each invocation gives its measured and its AWS
 * time.
 */
export function createInvocationTimer() {
  const current = new AsyncLocalStorage<Invocation>();
  return {
    time(client: WithMiddleware, service: Service): void {
      client.middlewareStack.add(
        (next) => async (args) => {
          const invocation = current.getStore();
          if (!invocation) return next(args);
          const start = performance.now();
          try {
            return await next(args);
          } finally {
            const end = performance.now();
            const wait = (args.input as { WaitTimeSeconds?: number }).WaitTimeSeconds ?? 0;
            const awsMs = service === "sqs" && wait > 0 ? end - start : TYPICAL_LATENCY_MS[service];
            invocation.calls.push({ start, end, awsMs });
          }
        },
        { step: "initialize", name: `jobschedInvocationTimer-${service}` },
      );
    },
    /** Runs one invocation; reports its measured time and its time with AWS latencies. */
    async invoke<R>(run: () => Promise<R>, report: (measuredMs: number, awsMs: number) => void): Promise<R> {
      const invocation: Invocation = { calls: [] };
      const start = performance.now();
      try {
        return await current.run(invocation, run);
      } finally {
        const measured = performance.now() - start;
        report(measured, awsEquivalentMs(start, measured, invocation.calls));
      }
    },
  };
}
