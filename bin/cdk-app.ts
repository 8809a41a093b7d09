import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { stackPropsFromContext } from "../lib/app-config";
import { JobschedStack } from "../lib/jobsched-stack";

/**
 * The CDK app: `npx cdk synth` works offline; `npx cdk deploy` installs jobsched in an account.
 * cdk-nag's AwsSolutions checks run on every synth: an unacknowledged finding fails it.
 *
 * Configuration (cdk.json context or `-c name=value`), read by lib/app-config.ts; every setting
 * of lambdas/definitions/settings.ts by its own name, defaults there and in docs/deploy.md:
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
 *   jobsched:tenantMapping: {"<principal or role ARN>": "<tenant>"} for principals that share a
 *   tenant (an object, or its JSON text);
 *   jobsched:logRetentionDays (90), jobsched:apiRateLimit (2000), jobsched:apiBurstLimit (4000),
 *   jobsched:reservedConcurrency ({"tick":2,"sweeper":32,"internal":300}; packages/cdk/src/stack-limits.ts).
 */
const app = new App();
new JobschedStack(
  app,
  "Jobsched",
  stackPropsFromContext((name) => app.node.tryGetContext(name)),
);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
