import { Duration, RemovalPolicy } from "aws-cdk-lib";
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IAlarmAction,
  Metric,
  SingleValueWidget,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import { ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Key } from "aws-cdk-lib/aws-kms";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

export interface ObservabilityProps {
  readonly runDeadLetterQueue: Queue;
  readonly sweepDeadLetterQueue: Queue;
  readonly sweeper: IFunction;
  readonly tick: IFunction;
  /** Alarms notify this address through an SNS topic, if given. */
  readonly alarmEmail?: string | undefined;
  /** Run start lateness (p99 over 5 minutes) above which the lateness alarm fires. */
  readonly latenessAlarmSeconds: number;
}

/** The EMF metrics the Lambdas publish (namespace jobsched, dimension service=jobsched). */
const metric = (metricName: string, statistic: string, period = Duration.minutes(1)) =>
  new Metric({
    namespace: "jobsched",
    metricName,
    dimensionsMap: { service: "jobsched" },
    statistic,
    period,
  });

/**
 * Alarms and the dashboard. Alarms: dead letters waiting (the DeadLetterDepth metric the tick
 * publishes), messages SQS gave up on (run and sweep dead-letter queues), sweep or tick errors,
 * sweeps that enqueue late, and runs that start late. All notify one SNS topic, which mails
 * `alarmEmail` when it is set.
 */
export class Observability extends Construct {
  readonly alarms: Alarm[] = [];
  /** Runs wait in the dead letters. */
  readonly deadLetterAlarm: Alarm;
  readonly topic: Topic;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    // Encrypted at rest with a key of the stack's own: CloudWatch cannot publish to a topic under
    // the AWS-managed SNS key, whose policy cannot be changed to let it.
    const key = new Key(this, "AlarmTopicKey", {
      description: "jobsched alarm topic",
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    key.grant(new ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*");
    this.topic = new Topic(this, "Alarms", {
      displayName: "jobsched alarms",
      enforceSSL: true,
      masterKey: key,
    });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    const action: IAlarmAction = new SnsAction(this.topic);
    const alarm = (name: string, description: string, m: Metric, threshold: number, periods = 1) => {
      const created = new Alarm(this, name, {
        alarmDescription: description,
        metric: m,
        threshold,
        evaluationPeriods: periods,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(action);
      this.alarms.push(created);
      return created;
    };

    this.deadLetterAlarm = alarm(
      "DeadLetters",
      "Runs are dead-lettered: see GET /api/v1/dead-letters (or jobsched dlq list) and replay them",
      metric("DeadLetterDepth", "Maximum", Duration.minutes(5)),
      1,
    );
    alarm(
      "RunQueueGaveUp",
      "SQS moved run messages to the run dead-letter queue (received 50 times without completion)",
      props.runDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5) }),
      1,
    );
    alarm(
      "SweepsFailing",
      "Sweep groups failed 5 times and wait in the sweep dead-letter queue: their one-offs made ahead wait until the messages are moved back (start-message-move-task; docs/deploy.md)",
      props.sweepDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5) }),
      1,
    );
    alarm(
      "SweeperErrors",
      "The sweeper Lambda failed (its groups are retried; repeated failures delay runs)",
      props.sweeper.metricErrors({ period: Duration.minutes(5) }),
      1,
      2,
    );
    alarm(
      "TickErrors",
      "The tick Lambda failed: that turn's shard groups may not have been swept, nor the repair pass run, that minute",
      props.tick.metricErrors({ period: Duration.minutes(5) }),
      1,
      2,
    );
    alarm(
      "SweepsLate",
      "Sweeps enqueue runs after their due time (p99 over 5 minutes above 30 s)",
      metric("EnqueueLatenessP99", "Maximum", Duration.minutes(5)),
      30_000,
    );
    alarm(
      "RunsStartLate",
      `Runs start late (p99 of first-attempt start lateness above ${props.latenessAlarmSeconds} s for 10 minutes)`,
      metric("StartLateness", "p99", Duration.minutes(5)),
      props.latenessAlarmSeconds * 1000,
      2,
    );

    this.dashboard = new Dashboard(this, "Dashboard", {
      widgets: [
        [
          new GraphWidget({
            title: "Runs",
            width: 12,
            left: [
              "RunsCreated",
              "RunsLeased",
              "RunsSucceeded",
              "RunsRetried",
              "RunsDeadLettered",
              "RunsLost",
            ].map((name) => metric(name, "Sum")),
          }),
          new GraphWidget({
            title: "Start lateness (ms, first attempts)",
            width: 12,
            left: ["p50", "p90", "p99"].map((p) => metric("StartLateness", p)),
          }),
        ],
        [
          new SingleValueWidget({
            title: "Dead letters waiting",
            width: 6,
            metrics: [metric("DeadLetterDepth", "Maximum", Duration.minutes(5))],
          }),
          new GraphWidget({
            title: "Sweeps",
            width: 18,
            left: ["JobsRead", "DuplicatesAvoided", "MissedRecorded", "FailedShards"].map((name) =>
              metric(name, "Sum"),
            ),
            right: [metric("EnqueueLatenessP99", "Maximum")],
          }),
        ],
      ],
    });
  }
}
