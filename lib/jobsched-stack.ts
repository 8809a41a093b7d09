import { Duration, Stack, type StackProps } from "aws-cdk-lib";
import { Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import type { Construct } from "constructs";
import { CLOUD_SETTINGS, type SchedulerSettings } from "../lambdas/definitions/settings";
import { SchedulerHttpApi } from "./http-api";
import { JobsTable } from "./jobs-table";
import { RunQueues } from "./run-queues";
import { SchedulerFunctions } from "./scheduler-functions";

export interface JobschedStackProps extends StackProps {
  readonly settings?: Partial<SchedulerSettings>;
}

/** jobsched in one stack: table, queues, Lambdas, the HTTP API and the minute tick. */
export class JobschedStack extends Stack {
  constructor(scope: Construct, id: string, props: JobschedStackProps = {}) {
    super(scope, id, props);
    const settings = { ...CLOUD_SETTINGS, ...props.settings };
    const { table } = new JobsTable(this, "Jobs");
    const queues = new RunQueues(this, "Queues");
    const functions = new SchedulerFunctions(this, "Functions", {
      table,
      runQueue: queues.runQueue,
      laneArns: queues.laneArns,
      sweepQueue: queues.sweepQueue,
      settings,
    });
    new SchedulerHttpApi(this, "Http", { api: functions.api, internal: functions.internal });

    // EventBridge's finest rate is one minute; SQS delays give runs their second-level timing.
    new Rule(this, "Tick", {
      description: "jobsched minute tick: fan the sweep out over shard groups, repair lost deliveries",
      schedule: Schedule.rate(Duration.seconds(settings.tickSeconds)),
      targets: [new LambdaFunction(functions.tick, { retryAttempts: 0 })],
    });
  }
}
