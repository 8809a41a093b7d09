import { FUNCTION_TIMEOUT_SECONDS } from "./functions";

/**
 * The one definition of jobsched's SQS queues, read by the CDK construct, the local bootstrap
 * and the adapters.
 *
 * The run queue's visibility timeout is the default lease: a received message stays invisible
 * for as long as its worker holds the lease. Its redrive policy is a safety net for messages
 * that cannot even be parsed; ordinary retries and dead-lettering are decided by the
 * application, which knows each run's attempts.
 */
export interface QueueDefinition {
  readonly logicalName: string;
  readonly visibilityTimeoutSeconds: number;
  readonly retentionSeconds: number;
  /** Logical name of the dead-letter queue and how many receives before a message moves there. */
  readonly deadLetter?: { readonly logicalName: string; readonly maxReceiveCount: number };
}

const FOURTEEN_DAYS = 14 * 24 * 3600;

/**
 * The lanes' template. Its redrive limit is SQS's largest (1,000): idle workers' peeks count as
 * receives (decision 0049), one a listener each time a message shows, and the application
 * sends a fresh copy of a message received RECYCLE_AFTER_RECEIVES times long before that; the
 * dead-letter queue keeps only what nothing could handle that often.
 */
export const RUN_QUEUE = {
  logicalName: "runs",
  visibilityTimeoutSeconds: 30,
  retentionSeconds: FOURTEEN_DAYS,
  deadLetter: { logicalName: "runs-dlq", maxReceiveCount: 1_000 },
} as const satisfies QueueDefinition;

export const RUN_DEAD_LETTER_QUEUE = {
  logicalName: "runs-dlq",
  visibilityTimeoutSeconds: 30,
  retentionSeconds: FOURTEEN_DAYS,
} as const satisfies QueueDefinition;

/**
 * Push runs (jobs with a `target`): one queue, read by the dispatcher Lambda through an SQS
 * event source mapping, so no function runs while nothing is due (decision 0029). Its
 * visibility timeout is what a run is received with before its lease is set: six times the
 * dispatcher's timeout, as AWS advises for a queue that feeds a function; the lease step then
 * hides each leased run's message until its lease ends. Its redrive is the run queue's.
 */
export const PUSH_QUEUE = {
  logicalName: "push",
  visibilityTimeoutSeconds: 6 * FUNCTION_TIMEOUT_SECONDS.dispatcher,
  retentionSeconds: FOURTEEN_DAYS,
  deadLetter: { logicalName: "runs-dlq", maxReceiveCount: 50 },
} as const satisfies QueueDefinition;

/**
 * The tick's fan-out: one message per group of shards, consumed by the sweeper Lambda. Its
 * visibility timeout is six times the sweeper's timeout, as AWS advises for a queue that feeds a
 * function (the event source may retry a batch and keep messages while it does): a message is
 * never handed to a second sweeper while the first may still run. A failed group waits for
 * this, but not for its due jobs: the group's next turn sweeps them again within a sweep period
 * (two minutes in AWS, decision 0056; a sweep is idempotent, the group's cursor). Its slice of
 * one-offs made ahead is the message's own (decision 0059): a sweep that fails rewinds the
 * ledger so the next tick hands it out again, and one killed (its rewind not written) waits for
 * this timeout, up to six minutes. After 5 failures the message is kept aside in the dead-letter
 * queue for an alarm. Kept 14 days, like the others: the message is the only record of a slice
 * it holds, so it must never expire unread (nor be purged).
 */
export const SWEEP_QUEUE = {
  logicalName: "sweeps",
  visibilityTimeoutSeconds: 6 * FUNCTION_TIMEOUT_SECONDS.sweeper,
  retentionSeconds: FOURTEEN_DAYS,
  deadLetter: { logicalName: "sweeps-dlq", maxReceiveCount: 5 },
} as const satisfies QueueDefinition;

export const SWEEP_DEAD_LETTER_QUEUE = {
  logicalName: "sweeps-dlq",
  visibilityTimeoutSeconds: 30,
  retentionSeconds: FOURTEEN_DAYS,
} as const satisfies QueueDefinition;

/** Every queue, dead-letter queues first so a redrive target exists before its source. */
export const ALL_QUEUES: readonly QueueDefinition[] = [
  RUN_DEAD_LETTER_QUEUE,
  RUN_QUEUE,
  PUSH_QUEUE,
  SWEEP_DEAD_LETTER_QUEUE,
  SWEEP_QUEUE,
];

/**
 * Between the run queue's name and a lane's hash in a lane's queue name
 * (`<run queue name>_<hash>`). Stack names cannot hold it, so the IAM pattern
 * `<run queue name>_*` matches this stack's lanes and no other stack's queue.
 */
export const LANE_SEPARATOR = "_";

/** The most characters of a stack's name its run queue is named after (SQS names: 80 at most). */
const STACK_NAME_IN_QUEUE = 40;

/**
 * The run queue's name for a stack: `<stack name>-runs`, a name longer than 40 characters cut
 * to 31 and a hash of the whole name, so that two stacks alike in their first 40 characters
 * still have queues (and lanes) of their own.
 */
export function runQueueNameFor(stackName: string, hash: (text: string) => string): string {
  const prefix =
    stackName.length <= STACK_NAME_IN_QUEUE
      ? stackName
      : `${stackName.slice(0, 31)}-${hash(stackName).slice(0, 8)}`;
  return `${prefix}-runs`;
}
