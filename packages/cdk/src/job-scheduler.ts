import { Annotations, Aws, type CfnElement, CfnOutput, Stack, Validations } from "aws-cdk-lib";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import type { Alarm } from "aws-cdk-lib/aws-cloudwatch";
import type { TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { Rule, RuleTargetInput, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import {
  Effect,
  Grant,
  type IGrantable,
  type IRole,
  type ManagedPolicy,
  PolicyStatement,
} from "aws-cdk-lib/aws-iam";
import type { Topic } from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { LANE_SEPARATOR } from "../../../lambdas/definitions/queues";
import { CLOUD_SETTINGS, type SchedulerSettings, settingsFrom } from "../../../lambdas/definitions/settings";
import { parseTenantAccounts } from "../../../lambdas/definitions/target-role-config";
import { parseTenantMapping, parseWorkerBindings } from "../../../lambdas/definitions/worker-bindings";
import { AccessPolicies } from "./access-policies";
import { cloudSettings } from "./cloud-settings";
import { SchedulerHttpApi } from "./http-api";
import { JobsTable } from "./jobs-table";
import { Observability } from "./observability";
import { RunQueues } from "./run-queues";
import { SchedulerFunctions, targetRoleArnPattern } from "./scheduler-functions";
import { type StackLimits, stackLimitsFrom } from "./stack-limits";
import { tickRules } from "./tick-rules";

export interface JobSchedulerProps {
  /**
   * The scheduler's settings (tick, lookahead, lease, retries, quotas, retention...): each one
   * checked by the same schema the Lambdas read them with; a value they would refuse stops the
   * synth, named `settings.<key>`. Defaults: CLOUD_SETTINGS (docs/deploy.md lists them).
   */
  readonly settings?: Partial<SchedulerSettings>;
  /** Alarm notifications go to this address (an SNS email subscription to confirm). */
  readonly alarmEmail?: string;
  /** The run-lateness alarm fires when the p99 start lateness stays above this (default 10 s). */
  readonly latenessAlarmSeconds?: number;
  /**
   * Worker bindings (decision 0013): worker principal ARN -> the tenants it serves, as an object
   * or its JSON text. A binding that names no tenant stops the synth. Without any, no principal
   * may call /internal/*.
   */
  readonly workers?: Readonly<Record<string, readonly string[]>> | string;
  /** Principal or role ARN -> tenant, for principals that should share a tenant. */
  readonly tenantMapping?: Readonly<Record<string, string>> | string;
  /**
   * Tenant -> the AWS accounts its Lambda and SQS target roles may be in (decision 0035). A
   * tenant named by its principal's ARN has that account without it; a mapped tenant has only these.
   */
  readonly tenantAccounts?: Readonly<Record<string, readonly string[]>> | string;
  /**
   * Log retention, API throttling, reserved concurrency (stack-limits.ts): each one given is
   * checked (a log retention CloudWatch offers, whole numbers); the rest are DEFAULT_STACK_LIMITS.
   */
  readonly limits?: Partial<StackLimits>;
  /**
   * Stack outputs for the API's URL, the two policies' ARNs and the dispatcher role's ARN
   * (exported as `<stack name>-DispatcherRoleArn`). Default false: in your own stack, wire
   * the construct's properties instead; the repository's stand-alone app turns them on.
   */
  readonly outputs?: boolean;
}

/**
 * jobsched as one construct: the table, the queues, the five Lambdas, the HTTPS API (IAM auth),
 * the minute tick, the alarms and the dashboard. What your own resources wire to: `apiUrl`,
 * `grantTenantAccess` / `tenantPolicy` (callers of /api/*), `grantWorkerAccess` / `workerPolicy`
 * (workers, which also need a worker binding in `workers`), `deadLetterAlarm` and `alarmTopic`,
 * and `dispatcherRole` (named in the trust policy of your push targets' roles).
 */
export class JobScheduler extends Construct {
  /** The API's base URL (`https://<id>.execute-api.<region>.amazonaws.com`). */
  readonly apiUrl: string;
  readonly httpApi: HttpApi;
  /** May call /api/* (and is denied /internal/*): attach it to your tenants' roles. */
  readonly tenantPolicy: ManagedPolicy;
  /** May call /internal/*: attach it to your workers' roles (bind them to tenants in `workers`). */
  readonly workerPolicy: ManagedPolicy;
  /** Fires while runs wait in the dead letters (replay them: GET /api/v1/dead-letters). */
  readonly deadLetterAlarm: Alarm;
  /** Every alarm of the scheduler notifies this topic. */
  readonly alarmTopic: Topic;
  readonly alarms: readonly Alarm[];
  /** The role the dispatcher assumes your Lambda and SQS targets' roles with (decision 0035). */
  readonly dispatcherRole: IRole;
  readonly table: TableV2;
  readonly settings: SchedulerSettings;
  readonly #http: SchedulerHttpApi;

  constructor(scope: Construct, id: string, props: JobSchedulerProps = {}) {
    super(scope, id);
    if (
      Stack.of(this)
        .node.findAll()
        .some((c) => c !== this && c instanceof JobScheduler)
    ) {
      // Its queues are named after the stack (a deployment's runs find their lanes by name).
      throw new Error(
        "one JobScheduler per stack: its queues are named after the stack; put another in a stack of its own",
      );
    }
    // Settings given in code are held to the same schema as the context's; a key it does not
    // know is refused, not ignored (a typo would silently keep the default).
    const given = props.settings ?? {};
    const unknown = Object.keys(given).filter((key) => !(key in CLOUD_SETTINGS));
    if (unknown.length > 0)
      throw new Error(
        `settings: unknown ${unknown.map((key) => `"${key}"`).join(", ")} (known: ${Object.keys(CLOUD_SETTINGS).join(", ")})`,
      );
    const lateness = props.latenessAlarmSeconds ?? 10;
    if (!(Number.isFinite(lateness) && lateness > 0))
      throw new Error("latenessAlarmSeconds: must be a positive number");
    const settings = cloudSettings(
      settingsFrom(
        (key) => (given[key] === undefined ? undefined : String(given[key])),
        CLOUD_SETTINGS,
        (key) => `settings.${key}`,
      ),
    );
    this.settings = settings;
    const tenantMapping = parseTenantMapping(props.tenantMapping ?? {}, "tenantMapping");
    const tenantAccounts = parseTenantAccounts(props.tenantAccounts ?? {}, "tenantAccounts");
    const unplaced = [...new Set(Object.values(tenantMapping))].filter(
      (tenant) => tenantAccounts[tenant] === undefined,
    );
    if (unplaced.length > 0) {
      Annotations.of(this).addWarningV2(
        "jobsched:mapped-tenants-without-accounts",
        `Mapped tenants with no accounts (tenantAccounts): ${unplaced.join(", ")}; ` +
          "their Lambda and SQS targets will be refused until their accounts are listed.",
      );
    }
    const givenLimits: Partial<Record<string, unknown>> = props.limits ?? {};
    const limits = stackLimitsFrom(
      (name) => givenLimits[name],
      (name) => `limits.${name}`,
    );
    const workerBindings = parseWorkerBindings(props.workers ?? {}, "workers");
    if (workerBindings.size === 0) {
      Annotations.of(this).addWarningV2(
        "jobsched:no-workers",
        "No worker bindings (workers): every /internal/* call will be refused until one is configured.",
      );
    }
    const outputs = props.outputs === true;
    const { table } = new JobsTable(this, "Jobs");
    this.table = table;
    const queues = new RunQueues(this, "Queues");
    const functions = new SchedulerFunctions(this, "Functions", {
      table,
      runQueue: queues.runQueue,
      laneArns: queues.laneArns,
      laneArnPattern: queues.laneArnPattern,
      sweepQueue: queues.sweepQueue,
      pushQueue: queues.pushQueue,
      settings,
      workerBindings,
      tenantMapping,
      tenantAccounts,
      limits,
    });
    this.#http = new SchedulerHttpApi(
      this,
      "Http",
      { api: functions.api, internal: functions.internal },
      limits,
      outputs,
    );
    this.httpApi = this.#http.api;
    this.apiUrl = this.httpApi.apiEndpoint;
    const access = new AccessPolicies(this, "Access", this.#http, outputs);
    this.tenantPolicy = access.tenant;
    this.workerPolicy = access.worker;
    const observability = new Observability(this, "Observability", {
      runDeadLetterQueue: queues.deadLetterQueue,
      sweepDeadLetterQueue: queues.sweepDeadLetterQueue,
      sweeper: functions.sweeper,
      tick: functions.tick,
      alarmEmail: props.alarmEmail,
      latenessAlarmSeconds: lateness,
    });
    this.alarms = observability.alarms;
    this.alarmTopic = observability.topic;
    this.deadLetterAlarm = observability.deadLetterAlarm;
    if (functions.dispatcher.role === undefined) throw new Error("the dispatcher has no role");
    this.dispatcherRole = functions.dispatcher.role;

    if (outputs) {
      // Tenants name this role in the trust policy of the roles their Lambda and SQS targets use.
      new CfnOutput(Stack.of(this), "DispatcherRoleArn", {
        description:
          "The role jobsched's dispatcher assumes tenant target roles with (external id and session tag jobsched-tenant: the tenant)",
        value: this.dispatcherRole.roleArn,
        exportName: `${Stack.of(this).stackName}-DispatcherRoleArn`,
      });
    }

    // EventBridge's finest rate is one minute; SQS delays give runs their second-level timing.
    // One rule per turn of the sweep (decision 0056), each naming its turn in the tick's event.
    for (const rule of tickRules(settings)) {
      new Rule(this, rule.id, {
        description: `jobsched minute tick, turn ${rule.turn}: fan the sweep out over the turn's shard groups, repair lost deliveries`,
        schedule: Schedule.expression(rule.expression),
        targets: [
          new LambdaFunction(functions.tick, {
            retryAttempts: 0,
            event: RuleTargetInput.fromObject({ turn: rule.turn }),
          }),
        ],
      });
    }

    const stack = Stack.of(this);
    acknowledgeNagFindings(this, {
      targetRoles: targetRoleArnPattern(settings),
      table: stack.getLogicalId(table.node.defaultChild as CfnElement),
      api: stack.getLogicalId(this.httpApi.node.defaultChild as CfnElement),
      runQueueName: queues.runQueueName,
    });
  }

  /**
   * Lets `grantee` call the tenant API (/api/*) as its own tenant, and denies it the lease
   * protocol (/internal/*) outright, as `tenantPolicy` does.
   */
  grantTenantAccess(grantee: IGrantable): Grant {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "TenantsNeverCallTheLeaseProtocol",
        effect: Effect.DENY,
        actions: ["execute-api:Invoke"],
        resources: [this.#http.routesArn("internal")],
      }),
    );
    return Grant.addToPrincipal({
      grantee,
      actions: ["execute-api:Invoke"],
      resourceArns: [this.#http.routesArn("api")],
    });
  }

  /**
   * Lets `grantee` call the lease protocol (/internal/*). A worker also needs a binding to the
   * tenants it serves (`workers`), or every call is refused.
   */
  grantWorkerAccess(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ["execute-api:Invoke"],
      resourceArns: [this.#http.routesArn("internal")],
    });
  }
}

/**
 * cdk-nag AwsSolutions findings this design accepts, each by its exact finding (rule and
 * evidence) and with its reason, on the construct itself, so that they hold in any app that
 * runs cdk-nag over it. Anything else cdk-nag finds fails `cdk synth` and the tests.
 */
function acknowledgeNagFindings(
  scope: Construct,
  ids: { targetRoles: string; table: string; api: string; runQueueName: string },
): void {
  const accept = (id: string, reason: string) =>
    Validations.of(scope).acknowledge({ id: `AwsSolutions::AwsSolutions-${id}`, reason });
  accept(
    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    "AWSLambdaBasicExecutionRole only lets each function write its own CloudWatch logs; a copy of it would say the same.",
  );
  accept(
    `IAM5[Resource::<${ids.table}.Arn>/index/*]`,
    "The Lambdas query the jobs table's own four GSIs (due, repair, tenant, dead-letter); no wildcard actions.",
  );
  accept(
    `IAM5[Resource::arn:<AWS::Partition>:sqs:<AWS::Region>:<AWS::AccountId>:${ids.runQueueName}${LANE_SEPARATOR}*]`,
    "The per-(tenant, type) run lanes are created at run time (decision 0009); the name prefix limits " +
      "the grant to this stack's run queues, and the actions are listed one by one.",
  );
  accept(
    `IAM5[Resource::${ids.targetRoles.replace(Aws.PARTITION, "<AWS::Partition>")}]`,
    "The dispatcher assumes the role each tenant names for its Lambda and SQS targets, in the tenant's own " +
      "account (decision 0035): only roles named for jobsched (jobsched:targetRoleNames), only with an external " +
      "id and the jobsched-tenant session tag, which the role's trust policy pins to its tenant; the code holds " +
      "each tenant to its own accounts.",
  );
  for (const prefix of ["api", "internal"]) {
    accept(
      `IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${ids.api}>/*/*/${prefix}/*]`,
      `The exported ${prefix === "api" ? "tenant" : "worker"} policy allows every method and route under /${prefix}/ of this API: that is the kind of caller it describes.`,
    );
  }
  accept(
    "L1",
    "The functions run on Node.js 22, the runtime the project targets and tests (esbuild target node22); " +
      "moving to a newer runtime is a deliberate upgrade, not an automatic one.",
  );
}
