import { z } from "zod";
import { CLOUD_SETTINGS, envNameOf, type SchedulerSettings, settingsFrom } from "../definitions/settings";
import { parseTenantAccounts, type TenantAccounts } from "../definitions/target-role-config";
import { parseTenantMapping, parseWorkerBindings, type WorkerBindings } from "../definitions/worker-bindings";

/**
 * Configuration the Lambdas read from their environment. The CDK stack sets these; the local
 * runtime and the tests set the same names, plus endpoints for the emulators. The settings are
 * read with the one settings schema (definitions/settings.ts), one variable each (TICK_SECONDS...).
 */
const environmentSchema = z.object({
  AWS_REGION: z.string().default("us-east-1"),
  TABLE_NAME: z.string().min(1),
  RUN_QUEUE_URL: z.string().min(1),
  SWEEP_QUEUE_URL: z.string().min(1),
  /** The dispatcher's queue (push runs); the stack sets it for every function. */
  PUSH_QUEUE_URL: z.string().default(""),
  /** Emulator endpoints; unset in AWS. */
  DYNAMODB_ENDPOINT: z.string().url().optional(),
  SQS_ENDPOINT: z.string().url().optional(),
  /** The role idle workers' lane credentials are assumed from (decision 0049); the stack sets it. */
  LANE_LISTENER_ROLE_ARN: z.string().startsWith("arn:").optional(),
  /** JSON object: principal or role ARN -> tenant name. Optional. */
  TENANT_MAPPING: z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parseTenantMapping(text ?? "", "TENANT_MAPPING");
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** JSON object: tenant -> the accounts its target roles may be in (decision 0035). Optional. */
  TENANT_ACCOUNTS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parseTenantAccounts(text ?? "", "TENANT_ACCOUNTS");
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** JSON object: worker principal ARN -> the tenants it serves. Unset: no worker may lease. */
  WORKER_BINDINGS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      try {
        return parseWorkerBindings(text ?? "", "WORKER_BINDINGS");
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
});

export interface RuntimeConfig {
  readonly region: string;
  readonly tableName: string;
  readonly runQueueUrl: string;
  readonly sweepQueueUrl: string;
  /** Push runs' queue, read by the dispatcher ("" where there is none: push jobs cannot run). */
  readonly pushQueueUrl: string;
  readonly dynamodbEndpoint: string | undefined;
  readonly sqsEndpoint: string | undefined;
  /** Idle workers' lane credentials come from this role (decision 0049); unset locally. */
  readonly laneListenerRoleArn?: string | undefined;
  readonly settings: SchedulerSettings;
  readonly tenantMapping?: Readonly<Record<string, string>>;
  /** Tenant -> the accounts its Lambda and SQS target roles may be in, beyond its own. */
  readonly tenantAccounts?: TenantAccounts;
  /** Which tenants each worker principal serves; none: every /internal/* call is 403. */
  readonly workerBindings?: WorkerBindings;
}

export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): RuntimeConfig {
  const parsed = environmentSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`jobsched is misconfigured: ${problems}`);
  }
  const e = parsed.data;
  let settings: SchedulerSettings;
  try {
    settings = settingsFrom((key) => env[envNameOf(key)], CLOUD_SETTINGS, envNameOf);
  } catch (error) {
    throw new Error(`jobsched is misconfigured: ${(error as Error).message}`);
  }
  return {
    region: e.AWS_REGION,
    tableName: e.TABLE_NAME,
    runQueueUrl: e.RUN_QUEUE_URL,
    sweepQueueUrl: e.SWEEP_QUEUE_URL,
    pushQueueUrl: e.PUSH_QUEUE_URL,
    dynamodbEndpoint: e.DYNAMODB_ENDPOINT,
    sqsEndpoint: e.SQS_ENDPOINT,
    laneListenerRoleArn: e.LANE_LISTENER_ROLE_ARN,
    tenantMapping: e.TENANT_MAPPING,
    tenantAccounts: e.TENANT_ACCOUNTS,
    workerBindings: e.WORKER_BINDINGS,
    settings,
  };
}
