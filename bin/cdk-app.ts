import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { MAX_PAYLOAD_BYTES } from "../lambdas/core/schemas";
import { CLOUD_SETTINGS, type SchedulerSettings } from "../lambdas/definitions/settings";
import { JobschedStack } from "../lib/jobsched-stack";
import { stackLimitsFrom } from "../lib/stack-limits";

/**
 * The CDK app: `npx cdk synth` works offline; `npx cdk deploy` installs jobsched in an account.
 * cdk-nag's AwsSolutions checks run on every synth: an unacknowledged finding fails it.
 *
 * Configuration (cdk.json context or `-c name=value`), defaults in lambdas/definitions/settings.ts:
 *   jobsched:tickSeconds (60, at least 60), jobsched:lookaheadSeconds (90),
 *   jobsched:leaseSeconds (30), jobsched:repairGraceSeconds (120),
 *   jobsched:tenantRunsPerSecond (0 = no limit), jobsched:retryBaseSeconds (10),
 *   jobsched:retryCapSeconds (3600), jobsched:maxPayloadBytes (262144, the most),
 *   jobsched:runRetentionDays (90; 0 = runs are kept for good),
 *   jobsched:tenantCreatesPerSecond (200), jobsched:tenantMaxActiveJobs (100000),
 *   jobsched:tenantMaxJobTypes (100) (per-tenant quotas; 0 = no limit),
 *   jobsched:idleLaneDays (7; an empty lane unused this long is deleted; 0 = never),
 *   jobsched:alarmEmail, jobsched:latenessAlarmSeconds (10),
 *   jobsched:workers: worker bindings, {"<worker role ARN>": ["<tenant>", ...]} (an object in
 *   cdk.json, or its JSON text with -c); a binding that names no tenant stops the synth;
 *   jobsched:logRetentionDays (90), jobsched:apiRateLimit (2000), jobsched:apiBurstLimit (4000),
 *   jobsched:reservedConcurrency ({"tick":2,"sweeper":32,"internal":300}; lib/stack-limits.ts).
 */
const app = new App();
const context = (name: string): string | undefined => {
  const value = app.node.tryGetContext(`jobsched:${name}`);
  return value === undefined || value === null ? undefined : String(value);
};
const settings: { -readonly [K in keyof SchedulerSettings]?: number } = {};
for (const key of Object.keys(CLOUD_SETTINGS) as Array<keyof SchedulerSettings>) {
  const value = context(key);
  if (value === undefined) continue;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw new Error(`context jobsched:${key}: must be a whole number`);
  settings[key] = number;
}
const merged = { ...CLOUD_SETTINGS, ...settings };
if (merged.tickSeconds < 60) {
  throw new Error("context jobsched:tickSeconds: EventBridge cannot tick more often than every 60 s");
}
if (merged.maxPayloadBytes < 1 || merged.maxPayloadBytes > MAX_PAYLOAD_BYTES) {
  throw new Error(`context jobsched:maxPayloadBytes: must be 1 to ${MAX_PAYLOAD_BYTES}`);
}
if (merged.retryCapSeconds < merged.retryBaseSeconds) {
  throw new Error("context jobsched:retryCapSeconds: must not be less than jobsched:retryBaseSeconds");
}

new JobschedStack(app, "Jobsched", {
  description: "jobsched: serverless distributed job scheduler",
  settings,
  alarmEmail: context("alarmEmail"),
  latenessAlarmSeconds:
    context("latenessAlarmSeconds") === undefined ? undefined : Number(context("latenessAlarmSeconds")),
  workers: app.node.tryGetContext("jobsched:workers"),
  limits: stackLimitsFrom((name) => app.node.tryGetContext(`jobsched:${name}`) ?? undefined),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
