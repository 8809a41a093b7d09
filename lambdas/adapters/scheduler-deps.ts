import { randomBytes } from "node:crypto";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { STSClient } from "@aws-sdk/client-sts";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { SchedulerDeps } from "../core/deps";
import type { RandomBytes } from "../core/ids";
import type { LaneListening } from "../core/lane-listening-ports";
import type { WorkerBindings } from "../definitions/worker-bindings";
import { createDocumentClient, createSqsClient } from "./clients";
import { DynamoJobStore } from "./dynamo/dynamo-job-store";
import { DynamoRateLimiter } from "./dynamo/dynamo-rate-limiter";
import { DynamoRunStore } from "./dynamo/dynamo-run-store";
import { DynamoTenantQuotas } from "./dynamo/dynamo-tenant-quotas";
import { DynamoWebhookSecretStore } from "./dynamo/dynamo-webhook-secrets";
import type { RuntimeConfig } from "./environment";
import { log } from "./logger";
import { LaneDirectory } from "./sqs/lane-directory";
import { type ListenCredentialSource, SqsLaneListening } from "./sqs/sqs-lane-listening";
import { SqsRunQueue } from "./sqs/sqs-run-queue";
import { SqsSweepQueue } from "./sqs/sqs-sweep-queue";
import { systemClock } from "./system-clock";

export type HandlerDeps = SchedulerDeps & {
  readonly randomBytes: RandomBytes;
  /** Principal or role ARN -> tenant, for principals that should share a tenant. */
  readonly tenantMapping: Readonly<Record<string, string>>;
  /** Worker principal -> the tenants it serves (WORKER_BINDINGS; see worker-bindings.ts). */
  readonly workerBindings: WorkerBindings;
  /** Idle workers' lanes and their credentials (decision 0049). */
  readonly laneListening: LaneListening;
};

/** Wires the real adapters for a configuration: what every handler runs on. */
export function createSchedulerDeps(
  config: RuntimeConfig,
  db: DynamoDBDocumentClient = createDocumentClient(config),
  sqs: SQSClient = createSqsClient(config),
): HandlerDeps {
  const lanes = new LaneDirectory(sqs, db, config.tableName, config.runQueueUrl);
  return {
    jobs: new DynamoJobStore(db, config.tableName),
    runs: new DynamoRunStore(db, config.tableName, config.settings.runRetentionDays * 86_400),
    queue: new SqsRunQueue(sqs, lanes, config.pushQueueUrl),
    sweeps: new SqsSweepQueue(sqs, config.sweepQueueUrl),
    clock: systemClock,
    settings: config.settings,
    rateLimiter: new DynamoRateLimiter(db, config.tableName, config.settings.tenantRunsPerSecond),
    quotas: new DynamoTenantQuotas(db, config.tableName, config.settings),
    webhookSecrets: new DynamoWebhookSecretStore(db, config.tableName),
    tenantAccounts: config.tenantAccounts ?? {},
    random: Math.random,
    log,
    randomBytes: (size) => randomBytes(size),
    tenantMapping: config.tenantMapping ?? {},
    workerBindings: config.workerBindings ?? new Map(),
    laneListening: new SqsLaneListening(lanes, listenCredentialSource(config)),
  };
}

/** The emulator's endpoint locally, the stack's listener role in AWS, else none (workers poll). */
function listenCredentialSource(config: RuntimeConfig): ListenCredentialSource {
  if (config.sqsEndpoint) return { kind: "local", endpoint: config.sqsEndpoint, region: config.region };
  if (config.laneListenerRoleArn) {
    return {
      kind: "role",
      roleArn: config.laneListenerRoleArn,
      sts: new STSClient({ region: config.region }),
      region: config.region,
    };
  }
  return { kind: "none" };
}
