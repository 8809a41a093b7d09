import { CLOUD_SETTINGS, type SchedulerSettings, settingsFrom } from "../lambdas/definitions/settings";
import type { JobschedStackProps } from "./jobsched-stack";
import { stackLimitsFrom } from "./stack-limits";

/**
 * The stack's properties from the CDK context (cdk.json or `-c jobsched:name=value`), read by
 * bin/cdk-app.ts. The settings go through the one settings schema (definitions/settings.ts), so
 * a value the Lambdas would refuse stops the synth, named as the context key that set it.
 */
export type ContextReader = (name: string) => unknown;

export function stackPropsFromContext(tryGetContext: ContextReader): JobschedStackProps {
  const read = (name: string): unknown => {
    const value = tryGetContext(`jobsched:${name}`);
    return value === null ? undefined : value;
  };
  const text = (name: string): string | undefined => {
    const value = read(name);
    return value === undefined ? undefined : String(value);
  };
  const settings = cloudSettings(settingsFrom(text, CLOUD_SETTINGS, (key) => `context jobsched:${key}`));
  const lateness = text("latenessAlarmSeconds");
  const latenessAlarmSeconds = lateness === undefined ? undefined : Number(lateness);
  if (
    latenessAlarmSeconds !== undefined &&
    !(Number.isFinite(latenessAlarmSeconds) && latenessAlarmSeconds > 0)
  ) {
    throw new Error("context jobsched:latenessAlarmSeconds: must be a positive number");
  }
  return {
    description: "jobsched: serverless distributed job scheduler",
    settings,
    alarmEmail: text("alarmEmail"),
    ...(latenessAlarmSeconds === undefined ? {} : { latenessAlarmSeconds }),
    workers: read("workers"),
    tenantMapping: read("tenantMapping"),
    tenantAccounts: read("tenantAccounts"),
    limits: stackLimitsFrom((name) => read(name)),
  };
}

/** The settings checks only the cloud needs: EventBridge rules fire at most once a minute. */
export function cloudSettings(settings: SchedulerSettings): SchedulerSettings {
  if (settings.tickSeconds < 60) {
    throw new Error("context jobsched:tickSeconds: EventBridge cannot tick more often than every 60 s");
  }
  // In AWS a push target never reaches the deployment's own network (decision 0029).
  if (settings.allowPrivateTargets !== 0) {
    throw new Error(
      "context jobsched:allowPrivateTargets: must be 0 in AWS (private and loopback targets are for the local runtime only)",
    );
  }
  return settings;
}
