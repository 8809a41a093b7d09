import { join } from "node:path";
import { Aws, Duration, Lazy, RemovalPolicy } from "aws-cdk-lib";
import type { TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { ArnPrincipal, Effect, PolicyStatement, Role } from "aws-cdk-lib/aws-iam";
import {
  Architecture,
  Code,
  Function as LambdaFunction,
  LoggingFormat,
  Runtime,
} from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import {
  DISPATCHER_MAX_CONCURRENCY,
  FUNCTION_MEMORY_MB,
  FUNCTION_TIMEOUT_SECONDS,
} from "../../../lambdas/definitions/functions";
import { type SchedulerSettings, settingsEnvironment } from "../../../lambdas/definitions/settings";
import { DEAD_LETTER_INDEX, WEBHOOK_SECRET_KEY_PREFIX } from "../../../lambdas/definitions/table";
import { TENANT_SESSION_TAG_KEY, type TenantAccounts } from "../../../lambdas/definitions/target-role-config";
import { serializeWorkerBindings, type WorkerBindings } from "../../../lambdas/definitions/worker-bindings";
import type { StackLimits } from "./stack-limits";

/**
 * The Lambda bundles (scripts/build-lambdas.mjs): ../lambda beside this file's folder, the same
 * from the sources (src/) and from the package's bundle (dist/).
 */
const LAMBDA_BUNDLES = join(import.meta.dirname, "..", "lambda");

export interface SchedulerFunctionsProps {
  readonly table: TableV2;
  readonly runQueue: Queue;
  /** ARN pattern of the run lanes, created on demand (see RunQueues). */
  readonly laneArns: readonly string[];
  /** This stack's lanes only (not the run queue): what the tick may delete. */
  readonly laneArnPattern: string;
  readonly sweepQueue: Queue;
  /** Push runs: the dispatcher's event source. */
  readonly pushQueue: Queue;
  readonly settings: SchedulerSettings;
  /** Principal -> tenant (TENANT_MAPPING of the API and lease functions); empty: none set. */
  readonly tenantMapping: Readonly<Record<string, string>>;
  /** Tenant -> the accounts its target roles may be in (TENANT_ACCOUNTS of the API and dispatcher). */
  readonly tenantAccounts: TenantAccounts;
  /** Which tenants each worker principal serves: the lease function's WORKER_BINDINGS. */
  readonly workerBindings: WorkerBindings;
  readonly limits: StackLimits;
}

type FunctionRole = keyof typeof FUNCTION_MEMORY_MB;

/** Lambda allows 4 KB of environment variables per function, names and values together. */
const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4 * 1024;

function checkEnvironmentFits(name: string, environment: Readonly<Record<string, string>>): void {
  const bytes = Object.entries(environment).reduce(
    (sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value),
    0,
  );
  if (bytes > LAMBDA_ENVIRONMENT_LIMIT_BYTES) {
    throw new Error(
      `The ${name} function's environment is ${bytes} bytes, over Lambda's 4 KB: shorten jobsched:workers ` +
        "(name tenants by short TENANT_MAPPING names, or serve them from pools).",
    );
  }
}

/**
 * The four Lambdas: the tenant API, the worker lease protocol, the minute tick (fan-out and
 * repair) and the sweeper (one group of shards per SQS message). Each has its own role with
 * only the table and queue actions its use cases perform.
 */
export class SchedulerFunctions extends Construct {
  readonly api: LambdaFunction;
  readonly internal: LambdaFunction;
  readonly tick: LambdaFunction;
  readonly sweeper: LambdaFunction;
  readonly dispatcher: LambdaFunction;
  /** The role idle workers' lane credentials are assumed from (decision 0049). */
  readonly laneListener: Role;

  constructor(scope: Construct, id: string, props: SchedulerFunctionsProps) {
    super(scope, id);
    const environment = {
      TABLE_NAME: props.table.tableName,
      RUN_QUEUE_URL: props.runQueue.queueUrl,
      SWEEP_QUEUE_URL: props.sweepQueue.queueUrl,
      PUSH_QUEUE_URL: props.pushQueue.queueUrl,
      ...settingsEnvironment(props.settings),
      POWERTOOLS_SERVICE_NAME: "jobsched",
    };
    const make = (name: string, bundle: string, role: FunctionRole, extra: Record<string, string> = {}) => {
      checkEnvironmentFits(name, { ...environment, ...extra });
      const reserved = props.limits.reservedConcurrency[role as keyof StackLimits["reservedConcurrency"]];
      return new LambdaFunction(this, name, {
        code: Code.fromAsset(join(LAMBDA_BUNDLES, bundle)),
        handler: "index.handler",
        runtime: Runtime.NODEJS_22_X,
        architecture: Architecture.ARM_64,
        memorySize: FUNCTION_MEMORY_MB[role],
        timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS[role]),
        // Capacity kept for the functions that keep runs moving, whatever floods the API;
        // it is also their ceiling (packages/cdk/src/stack-limits.ts).
        ...(reserved ? { reservedConcurrentExecutions: reserved } : {}),
        // A log group of the stack's own, so that its retention is set (and kept) by the stack.
        logGroup: new LogGroup(this, `${name}Logs`, {
          retention: props.limits.logRetentionDays as RetentionDays,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
        environment: { ...environment, ...extra },
        loggingFormat: LoggingFormat.JSON,
      });
    };

    // The callers' tenants: the API and the lease protocol map principals to them.
    const mapping: Record<string, string> =
      Object.keys(props.tenantMapping).length > 0
        ? { TENANT_MAPPING: JSON.stringify(props.tenantMapping) }
        : {};
    // Whose accounts a target role may be in: checked at create (API) and delivery (dispatcher).
    const accounts: Record<string, string> =
      Object.keys(props.tenantAccounts).length > 0
        ? { TENANT_ACCOUNTS: JSON.stringify(props.tenantAccounts) }
        : {};
    this.api = make("Api", "api", "api", { ...mapping, ...accounts });
    // Idle workers wait on their own lanes in SQS (decision 0049): the lease protocol alone
    // may assume this role, and narrows each session to one worker's lanes by a session policy.
    // The role may do nothing but receive from this stack's lanes.
    this.laneListener = new Role(this, "LaneListener", {
      assumedBy: new ArnPrincipal(Lazy.string({ produce: () => this.internal.role?.roleArn ?? "" })),
      description:
        "jobsched: idle workers long-poll their own lanes (ReceiveMessage; each session narrowed to its lanes)",
      maxSessionDuration: Duration.hours(1),
    });
    this.laneListener.addToPolicy(
      new PolicyStatement({ actions: ["sqs:ReceiveMessage"], resources: [props.laneArnPattern] }),
    );
    // Only the lease protocol needs the worker bindings.
    this.internal = make("Internal", "internal", "internal", {
      ...mapping,
      WORKER_BINDINGS: serializeWorkerBindings(props.workerBindings),
      LANE_LISTENER_ROLE_ARN: this.laneListener.roleArn,
    });
    this.internal.addToRolePolicy(
      new PolicyStatement({ actions: ["sts:AssumeRole"], resources: [this.laneListener.roleArn] }),
    );
    this.tick = make("Tick", "tick", "tick");
    this.sweeper = make("Sweeper", "sweeper", "sweeper");
    this.sweeper.addEventSource(
      new SqsEventSource(props.sweepQueue, {
        batchSize: 4,
        reportBatchItemFailures: true,
        maxConcurrency: 32,
      }),
    );

    // The dispatcher: push runs as they come due, from the push queue's event source, billed
    // only while there are some (decision 0029). Batches of 10 with no batching window: a run
    // is handed over the moment it is visible. Its maximum concurrency is its share of the
    // account; reserved concurrency would take that much from everything else even when idle.
    this.dispatcher = make("Dispatcher", "dispatcher", "dispatcher", accounts);
    this.dispatcher.addEventSource(
      new SqsEventSource(props.pushQueue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: DISPATCHER_MAX_CONCURRENCY,
      }),
    );

    const read = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"];
    const write = ["dynamodb:PutItem", "dynamodb:UpdateItem"];
    props.table.grant(this.api, ...read, ...write);
    props.table.grant(this.internal, ...read, ...write);
    // The tick counts the dead letters (a Scan of the sparse dead-letter index, and of nothing
    // else) and deletes idle lanes' records.
    props.table.grant(this.tick, ...read, ...write, "dynamodb:DeleteItem");
    this.tick.addToRolePolicy(
      new PolicyStatement({
        actions: ["dynamodb:Scan"],
        resources: [`${props.table.tableArn}/index/${DEAD_LETTER_INDEX.name}`],
      }),
    );
    props.table.grant(this.sweeper, ...read, ...write);
    props.table.grant(this.dispatcher, ...read, ...write);
    this.guardWebhookSecrets(props.table);

    // Every sender may create a lane on first use (copying the run queue's attributes): the API
    // fires near-term jobs and replays, the sweeper sends due runs, the tick repaired ones, the
    // lease protocol retries. Only the lease protocol receives.
    const send = ["sqs:SendMessage", "sqs:CreateQueue", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"];
    const lanes = (...actions: string[]) => new PolicyStatement({ actions, resources: [...props.laneArns] });
    for (const fn of [this.api, this.tick, this.sweeper]) fn.addToRolePolicy(lanes(...send));
    this.internal.addToRolePolicy(
      lanes(...send, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"),
    );
    props.sweepQueue.grantSendMessages(this.tick);
    // Push runs are sent by the same senders into the one push queue; the dispatcher also
    // keeps its messages (retries, lease extensions) as the lease protocol keeps a lane's.
    const push = (...actions: string[]) =>
      new PolicyStatement({ actions, resources: [props.pushQueue.queueArn] });
    for (const fn of [this.api, this.tick, this.sweeper]) {
      fn.addToRolePolicy(push("sqs:SendMessage", "sqs:GetQueueAttributes"));
    }
    this.dispatcher.addToRolePolicy(push("sqs:SendMessage", "sqs:ChangeMessageVisibility"));
    // Lambda and SQS targets are reached with the tenant's own role and nothing else
    // (decision 0035): the dispatcher may assume only roles named for it (targetRoleNames), in
    // any account (the code holds each tenant to its own), only with an external id, and only
    // tagged with the tenant it acts for, which the role's trust policy checks.
    const targetRoles = targetRoleArnPattern(props.settings);
    this.dispatcher.addToRolePolicy(
      new PolicyStatement({
        actions: ["sts:AssumeRole"],
        resources: [targetRoles],
        conditions: { Null: { "sts:ExternalId": "false" } },
      }),
    );
    this.dispatcher.addToRolePolicy(
      new PolicyStatement({
        actions: ["sts:TagSession"],
        resources: [targetRoles],
        conditions: {
          Null: { [`aws:RequestTag/${TENANT_SESSION_TAG_KEY}`]: "false" },
          "ForAllValues:StringEquals": { "aws:TagKeys": [TENANT_SESSION_TAG_KEY] },
        },
      }),
    );
    // The tick deletes idle lanes: this stack's lanes only, never the run queue (their template).
    this.tick.addToRolePolicy(
      new PolicyStatement({ actions: ["sqs:DeleteQueue"], resources: [props.laneArnPattern] }),
    );
  }

  /**
   * The webhook secrets (pk WEBHOOK#<tenant>) live in the jobs table, which every function
   * uses; only the API (which rotates them) and the dispatcher (which signs with them) may
   * touch their items (decision 0036). Explicit denies, so that no broader grant added later
   * opens them: the item actions under the prefix (dynamodb:LeadingKeys, present on every
   * item request), writes for the dispatcher too, and for every function a Scan or PartiQL
   * read of the base table, where no leading key limits what comes back (the tick scans the
   * dead-letter index, which holds no secret).
   */
  private guardWebhookSecrets(table: TableV2): void {
    const secretItems = {
      "ForAnyValue:StringLike": { "dynamodb:LeadingKeys": [`${WEBHOOK_SECRET_KEY_PREFIX}*`] },
    };
    const writes = [
      "dynamodb:BatchWriteItem",
      "dynamodb:DeleteItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ];
    const reads = [
      "dynamodb:BatchGetItem",
      "dynamodb:ConditionCheckItem",
      "dynamodb:GetItem",
      "dynamodb:Query",
    ];
    const deny = (actions: string[], conditions?: Record<string, unknown>) =>
      new PolicyStatement({
        effect: Effect.DENY,
        actions,
        resources: [table.tableArn],
        ...(conditions ? { conditions } : {}),
      });
    for (const fn of [this.internal, this.tick, this.sweeper]) {
      fn.addToRolePolicy(deny([...reads, ...writes], secretItems));
    }
    this.dispatcher.addToRolePolicy(deny(writes, secretItems));
    for (const fn of [this.api, this.internal, this.tick, this.sweeper, this.dispatcher]) {
      fn.addToRolePolicy(deny(["dynamodb:PartiQLSelect", "dynamodb:Scan"]));
    }
  }
}

/** The roles the dispatcher may assume, in any account: `arn:<partition>:iam::*:role/<targetRoleNames>`. */
export function targetRoleArnPattern(settings: SchedulerSettings): string {
  return `arn:${Aws.PARTITION}:iam::*:role/${settings.targetRoleNames}`;
}
