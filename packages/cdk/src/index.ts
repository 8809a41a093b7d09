/**
 * @jobsched/cdk: jobsched as one construct for your own CDK app (decision 0061).
 *
 *   import { JobScheduler } from "@jobsched/cdk";
 *   const scheduler = new JobScheduler(this, "Scheduler", { settings: { runRetentionDays: 30 } });
 *   serviceRole.addManagedPolicy(scheduler.tenantPolicy);
 */
export type { SchedulerSettings } from "../../../lambdas/definitions/settings";
export { CLOUD_SETTINGS } from "../../../lambdas/definitions/settings";
export type { JobSchedulerProps } from "./job-scheduler";
export { JobScheduler } from "./job-scheduler";
export type { StackLimits } from "./stack-limits";
export { DEFAULT_STACK_LIMITS, stackLimitsFrom } from "./stack-limits";
