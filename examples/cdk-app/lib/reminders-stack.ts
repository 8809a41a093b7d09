import { JobScheduler, type SchedulerSettings } from "@jobsched/cdk";
import { CfnOutput, Duration, Stack, type StackProps } from "aws-cdk-lib";
import { AccountRootPrincipal, Role } from "aws-cdk-lib/aws-iam";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";

/**
 * A team's own stack with jobsched in it: the scheduler construct beside the team's resources,
 * wired together. The reminders service's role may call the scheduler's tenant API; the queue is
 * where the team's push jobs deliver (an SQS target).
 */
export interface RemindersStackProps extends StackProps {
  /** Settings on top of the team's own choice below. */
  readonly schedulerSettings?: Partial<SchedulerSettings>;
}

export class RemindersStack extends Stack {
  readonly scheduler: JobScheduler;

  constructor(scope: Construct, id: string, props: RemindersStackProps = {}) {
    super(scope, id, props);

    const scheduler = new JobScheduler(this, "Scheduler", {
      settings: { runRetentionDays: 30, tenantCreatesPerSecond: 50, ...props.schedulerSettings },
      alarmEmail: "oncall@example.com",
      // The team's workers' role serves the reminders service's tenant (its role's ARN).
      workers: {
        "arn:aws:iam::123456789012:role/reminder-workers": [
          "arn:aws:iam::123456789012:role/reminders-service",
        ],
      },
    });
    this.scheduler = scheduler;

    // The team's own resources.
    const deadLetters = new Queue(this, "ReminderDeadLetters", {
      enforceSSL: true,
      encryption: QueueEncryption.SQS_MANAGED,
      retentionPeriod: Duration.days(14),
    });
    const reminders = new Queue(this, "Reminders", {
      enforceSSL: true,
      encryption: QueueEncryption.SQS_MANAGED,
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: 5 },
    });
    const service = new Role(this, "RemindersService", {
      assumedBy: new AccountRootPrincipal(),
      description: "The reminders service: schedules its reminders through jobsched",
    });
    service.addManagedPolicy(scheduler.tenantPolicy);

    new CfnOutput(this, "SchedulerUrl", { value: scheduler.apiUrl });
    new CfnOutput(this, "RemindersQueueUrl", { value: reminders.queueUrl });
    new CfnOutput(this, "DispatcherRoleArn", { value: scheduler.dispatcherRole.roleArn });
  }
}
