import { Duration } from "aws-cdk-lib";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { RUN_DEAD_LETTER_QUEUE, RUN_QUEUE } from "../lambdas/definitions/queues";

/**
 * The run queue and its dead-letter queue, from lambdas/definitions/queues.ts. Encrypted at
 * rest (SQS-managed keys) and reachable only over TLS.
 */
export class RunQueues extends Construct {
  readonly runQueue: Queue;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.deadLetterQueue = new Queue(this, "DeadLetters", {
      retentionPeriod: Duration.seconds(RUN_DEAD_LETTER_QUEUE.retentionSeconds),
      visibilityTimeout: Duration.seconds(RUN_DEAD_LETTER_QUEUE.visibilityTimeoutSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.runQueue = new Queue(this, "Runs", {
      retentionPeriod: Duration.seconds(RUN_QUEUE.retentionSeconds),
      visibilityTimeout: Duration.seconds(RUN_QUEUE.visibilityTimeoutSeconds),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: RUN_QUEUE.deadLetter.maxReceiveCount },
    });
  }
}
