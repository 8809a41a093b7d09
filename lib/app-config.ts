import { CLOUD_SETTINGS, settingsFrom } from "../lambdas/definitions/settings";
import { parseTenantAccounts } from "../lambdas/definitions/target-role-config";
import { parseTenantMapping, parseWorkerBindings } from "../lambdas/definitions/worker-bindings";
import { cloudSettings } from "../packages/cdk/src/cloud-settings";
import { type JobSchedulerProps, stackLimitsFrom } from "../packages/cdk/src/index";
import { tickRules } from "../packages/cdk/src/tick-rules";
import type { JobschedStackProps } from "./jobsched-stack";

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
  const contextKey = (key: string) => `context jobsched:${key}`;
  const settings = cloudSettings(settingsFrom(text, CLOUD_SETTINGS, contextKey), contextKey);
  tickRules(settings, contextKey);
  // Checked here as well as by the construct, so that a bad value is named by its context key.
  const workers = read("workers");
  parseWorkerBindings(workers ?? {}, contextKey("workers"));
  const tenantMapping = read("tenantMapping");
  parseTenantMapping(tenantMapping ?? {}, contextKey("tenantMapping"));
  const tenantAccounts = read("tenantAccounts");
  parseTenantAccounts(tenantAccounts ?? {}, contextKey("tenantAccounts"));
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
    workers: workers as JobSchedulerProps["workers"],
    tenantMapping: tenantMapping as JobSchedulerProps["tenantMapping"],
    tenantAccounts: tenantAccounts as JobSchedulerProps["tenantAccounts"],
    limits: stackLimitsFrom((name) => read(name)),
  };
}
