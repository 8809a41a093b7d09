import { z } from "zod";
import { MAX_PAYLOAD_BYTES } from "../core/schemas";
import { CLOUD_SETTINGS, type SchedulerSettings } from "../definitions/settings";
import { parseWorkerBindings, type WorkerBindings } from "../definitions/worker-bindings";

/**
 * Configuration the Lambdas read from their environment. The CDK stack sets these; the local
 * runtime and the tests set the same names, plus endpoints for the emulators.
 */
const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const environmentSchema = z.object({
  AWS_REGION: z.string().default("us-east-1"),
  TABLE_NAME: z.string().min(1),
  RUN_QUEUE_URL: z.string().min(1),
  SWEEP_QUEUE_URL: z.string().min(1),
  /** Emulator endpoints; unset in AWS. */
  DYNAMODB_ENDPOINT: z.string().url().optional(),
  SQS_ENDPOINT: z.string().url().optional(),
  TICK_SECONDS: seconds(CLOUD_SETTINGS.tickSeconds),
  LOOKAHEAD_SECONDS: seconds(CLOUD_SETTINGS.lookaheadSeconds),
  LEASE_SECONDS: seconds(CLOUD_SETTINGS.leaseSeconds),
  REPAIR_GRACE_SECONDS: seconds(CLOUD_SETTINGS.repairGraceSeconds),
  TENANT_RUNS_PER_SECOND: z.coerce.number().int().min(0).default(CLOUD_SETTINGS.tenantRunsPerSecond),
  LEASES_PER_SECOND: seconds(CLOUD_SETTINGS.leasesPerSecond),
  RETRY_BASE_SECONDS: seconds(CLOUD_SETTINGS.retryBaseSeconds),
  RETRY_CAP_SECONDS: seconds(CLOUD_SETTINGS.retryCapSeconds),
  MAX_PAYLOAD_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAYLOAD_BYTES)
    .default(CLOUD_SETTINGS.maxPayloadBytes),
  RUN_RETENTION_DAYS: z.coerce.number().int().min(0).default(CLOUD_SETTINGS.runRetentionDays),
  TENANT_CREATES_PER_SECOND: z.coerce.number().int().min(0).default(CLOUD_SETTINGS.tenantCreatesPerSecond),
  TENANT_MAX_ACTIVE_JOBS: z.coerce.number().int().min(0).default(CLOUD_SETTINGS.tenantMaxActiveJobs),
  TENANT_MAX_JOB_TYPES: z.coerce.number().int().min(0).default(CLOUD_SETTINGS.tenantMaxJobTypes),
  IDLE_LANE_DAYS: z.coerce.number().int().min(0).default(CLOUD_SETTINGS.idleLaneDays),
  /** JSON object: principal or role ARN -> tenant name. Optional. */
  TENANT_MAPPING: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined || text === "") return {};
      try {
        return z.record(z.string(), z.string()).parse(JSON.parse(text));
      } catch {
        ctx.addIssue({ code: "custom", message: "must be a JSON object of ARN -> tenant name" });
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
  readonly dynamodbEndpoint: string | undefined;
  readonly sqsEndpoint: string | undefined;
  readonly settings: SchedulerSettings;
  readonly tenantMapping?: Readonly<Record<string, string>>;
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
  return {
    region: e.AWS_REGION,
    tableName: e.TABLE_NAME,
    runQueueUrl: e.RUN_QUEUE_URL,
    sweepQueueUrl: e.SWEEP_QUEUE_URL,
    dynamodbEndpoint: e.DYNAMODB_ENDPOINT,
    sqsEndpoint: e.SQS_ENDPOINT,
    tenantMapping: e.TENANT_MAPPING,
    workerBindings: e.WORKER_BINDINGS,
    settings: {
      tickSeconds: e.TICK_SECONDS,
      lookaheadSeconds: e.LOOKAHEAD_SECONDS,
      leaseSeconds: e.LEASE_SECONDS,
      repairGraceSeconds: e.REPAIR_GRACE_SECONDS,
      tenantRunsPerSecond: e.TENANT_RUNS_PER_SECOND,
      leasesPerSecond: e.LEASES_PER_SECOND,
      retryBaseSeconds: e.RETRY_BASE_SECONDS,
      retryCapSeconds: e.RETRY_CAP_SECONDS,
      maxPayloadBytes: e.MAX_PAYLOAD_BYTES,
      runRetentionDays: e.RUN_RETENTION_DAYS,
      tenantCreatesPerSecond: e.TENANT_CREATES_PER_SECOND,
      tenantMaxActiveJobs: e.TENANT_MAX_ACTIVE_JOBS,
      tenantMaxJobTypes: e.TENANT_MAX_JOB_TYPES,
      idleLaneDays: e.IDLE_LANE_DAYS,
    },
  };
}
