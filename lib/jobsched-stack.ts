import { Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { JobScheduler, type JobSchedulerProps } from "../packages/cdk/src/index";

export type JobschedStackProps = StackProps & Omit<JobSchedulerProps, "outputs">;

/**
 * The repository's own app's stack (bin/cdk-app.ts): one JobScheduler construct with the stack's
 * outputs on. Its id is `Default`, which CDK leaves out of logical ids, so every resource keeps
 * the logical id it had when the stack held them itself (decision 0061): a stack deployed
 * before updates in place.
 */
export class JobschedStack extends Stack {
  readonly scheduler: JobScheduler;

  constructor(scope: Construct, id: string, props: JobschedStackProps = {}) {
    super(scope, id, props);
    const { settings, alarmEmail, latenessAlarmSeconds, workers, tenantMapping, tenantAccounts, limits } =
      props;
    this.scheduler = new JobScheduler(this, "Default", {
      ...(settings === undefined ? {} : { settings }),
      ...(alarmEmail === undefined ? {} : { alarmEmail }),
      ...(latenessAlarmSeconds === undefined ? {} : { latenessAlarmSeconds }),
      ...(workers === undefined ? {} : { workers }),
      ...(tenantMapping === undefined ? {} : { tenantMapping }),
      ...(tenantAccounts === undefined ? {} : { tenantAccounts }),
      ...(limits === undefined ? {} : { limits }),
      outputs: true,
    });
  }
}
