import { createHash } from "node:crypto";
import { Duration, Stack } from "aws-cdk-lib";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import {
  LANE_SEPARATOR,
  PUSH_QUEUE,
  type QueueDefinition,
  RUN_DEAD_LETTER_QUEUE,
  RUN_QUEUE,
  runQueueNameFor,
  SWEEP_DEAD_LETTER_QUEUE,
  SWEEP_QUEUE,
} from "../../../lambdas/definitions/queues";

/**
 * The run queue and the sweep fan-out queue, each with its dead-letter queue, from
 * lambdas/definitions/queues.ts. Encrypted at rest (SQS-managed keys), reachable only over TLS.
 *
 * The run queue is the template of the per-(tenant, type) lanes the Lambdas create on first use
 * (lambdas/adapters/sqs/lane-directory.ts): lanes copy its attributes and are named after it,
 * `<run queue name>_<hash>`. Stack names hold no `_`, so `laneArns` grants exactly this stack's
 * lanes, not the queues of a stack whose name merely starts the same way.
 */
export class RunQueues extends Construct {
  readonly runQueue: Queue;
  /** The lanes' ARN pattern (`<run queue name>_*`): this stack's lanes and nothing else. */
  readonly laneArnPattern: string;
  /** The lanes' ARN pattern, and the run queue's ARN (the lanes' template). */
  readonly laneArns: readonly string[];
  readonly runQueueName: string;
  readonly deadLetterQueue: Queue;
  readonly sweepQueue: Queue;
  readonly sweepDeadLetterQueue: Queue;
  /** Push runs, for the dispatcher's event source (decision 0029). */
  readonly pushQueue: Queue;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.deadLetterQueue = this.queue("DeadLetters", RUN_DEAD_LETTER_QUEUE);
    const stack = Stack.of(this);
    this.runQueueName = runQueueNameFor(stack.stackName, (text) =>
      createHash("sha256").update(text).digest("hex"),
    );
    this.runQueue = this.queue("Runs", RUN_QUEUE, this.deadLetterQueue, this.runQueueName);
    this.laneArnPattern = stack.formatArn({
      service: "sqs",
      resource: `${this.runQueueName}${LANE_SEPARATOR}*`,
    });
    this.laneArns = [this.laneArnPattern, this.runQueue.queueArn];
    this.pushQueue = this.queue("Push", PUSH_QUEUE, this.deadLetterQueue);
    this.sweepDeadLetterQueue = this.queue("SweepDeadLetters", SWEEP_DEAD_LETTER_QUEUE);
    this.sweepQueue = this.queue("Sweeps", SWEEP_QUEUE, this.sweepDeadLetterQueue);
  }

  private queue(id: string, definition: QueueDefinition, deadLetters?: Queue, queueName?: string): Queue {
    return new Queue(this, id, {
      ...(queueName ? { queueName } : {}),
      retentionPeriod: Duration.seconds(definition.retentionSeconds),
      visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      ...(deadLetters && definition.deadLetter
        ? { deadLetterQueue: { queue: deadLetters, maxReceiveCount: definition.deadLetter.maxReceiveCount } }
        : {}),
    });
  }
}
