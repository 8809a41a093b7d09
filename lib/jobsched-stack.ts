import {
  Annotations,
  Aws,
  type CfnElement,
  CfnOutput,
  Stack,
  type StackProps,
  Validations,
} from "aws-cdk-lib";
import { Rule, RuleTargetInput, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import type { Construct } from "constructs";
import { LANE_SEPARATOR } from "../lambdas/definitions/queues";
import { CLOUD_SETTINGS, type SchedulerSettings, settingsFrom } from "../lambdas/definitions/settings";
import { parseTenantAccounts } from "../lambdas/definitions/target-role-config";
import { parseTenantMapping, parseWorkerBindings } from "../lambdas/definitions/worker-bindings";
import { AccessPolicies } from "./access-policies";
import { cloudSettings } from "./app-config";
import { SchedulerHttpApi } from "./http-api";
import { JobsTable } from "./jobs-table";
import { Observability } from "./observability";
import { RunQueues } from "./run-queues";
import { SchedulerFunctions, targetRoleArnPattern } from "./scheduler-functions";
import { DEFAULT_STACK_LIMITS, type StackLimits } from "./stack-limits";
import { tickRules } from "./tick-rules";

export interface JobschedStackProps extends StackProps {
  readonly settings?: Partial<SchedulerSettings>;
  /** Alarm notifications go to this address (an SNS email subscription to confirm). */
  readonly alarmEmail?: string | undefined;
  /** The run-lateness alarm fires when the p99 start lateness stays above this (default 10 s). */
  readonly latenessAlarmSeconds?: number;
  /**
   * Worker bindings (decision 0013): worker principal ARN -> the tenants it serves, as an object
   * or its JSON text (CDK context jobsched:workers). Validated here: a binding that names no
   * tenant stops the synth. Without any, no principal may call /internal/*.
   */
  readonly workers?: unknown;
  /**
   * Principal or role ARN -> tenant, for principals that should share a tenant, as an object or
   * its JSON text (CDK context jobsched:tenantMapping): the API and lease functions' TENANT_MAPPING.
   */
  readonly tenantMapping?: unknown;
  /**
   * Tenant -> the AWS accounts its Lambda and SQS target roles may be in, as an object or its
   * JSON text (CDK context jobsched:tenantAccounts; decision 0035). A tenant named by its
   * principal's ARN has that account without it; a mapped tenant has only these.
   */
  readonly tenantAccounts?: unknown;
  /** Log retention, API throttling, reserved concurrency (lib/stack-limits.ts). */
  readonly limits?: StackLimits;
}

/** jobsched in one stack: table, queues, Lambdas, the HTTP API, the minute tick, alarms. */
export class JobschedStack extends Stack {
  constructor(scope: Construct, id: string, props: JobschedStackProps = {}) {
    super(scope, id, props);
    // Settings given in code are held to the same schema as the context's.
    const given = props.settings ?? {};
    const settings = cloudSettings(
      settingsFrom(
        (key) => (given[key] === undefined ? undefined : String(given[key])),
        CLOUD_SETTINGS,
        (key) => `settings.${key}`,
      ),
    );
    const tenantMapping = parseTenantMapping(props.tenantMapping ?? {}, "context jobsched:tenantMapping");
    const tenantAccounts = parseTenantAccounts(props.tenantAccounts ?? {}, "context jobsched:tenantAccounts");
    const unplaced = [...new Set(Object.values(tenantMapping))].filter(
      (tenant) => tenantAccounts[tenant] === undefined,
    );
    if (unplaced.length > 0) {
      Annotations.of(this).addWarningV2(
        "jobsched:mapped-tenants-without-accounts",
        `Mapped tenants with no accounts (context jobsched:tenantAccounts): ${unplaced.join(", ")}; ` +
          "their Lambda and SQS targets will be refused until their accounts are listed.",
      );
    }
    const limits = props.limits ?? DEFAULT_STACK_LIMITS;
    const workerBindings = parseWorkerBindings(props.workers ?? {}, "context jobsched:workers");
    if (workerBindings.size === 0) {
      Annotations.of(this).addWarningV2(
        "jobsched:no-workers",
        "No worker bindings (context jobsched:workers): every /internal/* call will be refused until one is configured.",
      );
    }
    const { table } = new JobsTable(this, "Jobs");
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
    const http = new SchedulerHttpApi(
      this,
      "Http",
      { api: functions.api, internal: functions.internal },
      limits,
    );
    new AccessPolicies(this, "Access", http);
    new Observability(this, "Observability", {
      runDeadLetterQueue: queues.deadLetterQueue,
      sweepDeadLetterQueue: queues.sweepDeadLetterQueue,
      sweeper: functions.sweeper,
      tick: functions.tick,
      alarmEmail: props.alarmEmail,
      latenessAlarmSeconds: props.latenessAlarmSeconds ?? 10,
    });

    // Tenants name this role in the trust policy of the roles their Lambda and SQS targets use.
    new CfnOutput(this, "DispatcherRoleArn", {
      description:
        "The role jobsched's dispatcher assumes tenant target roles with (external id and session tag jobsched-tenant: the tenant)",
      value: functions.dispatcher.role?.roleArn ?? "",
      exportName: `${this.stackName}-DispatcherRoleArn`,
    });

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

    acknowledgeNagFindings(this, {
      targetRoles: targetRoleArnPattern(settings),
      table: this.getLogicalId(table.node.defaultChild as CfnElement),
      api: this.getLogicalId(http.api.node.defaultChild as CfnElement),
      runQueueName: queues.runQueueName,
    });
  }
}

/**
 * cdk-nag AwsSolutions findings this design accepts, each by its exact finding (rule and
 * evidence) and with its reason. Anything else cdk-nag finds fails `cdk synth` and the tests.
 */
function acknowledgeNagFindings(
  stack: Stack,
  ids: { targetRoles: string; table: string; api: string; runQueueName: string },
): void {
  const accept = (id: string, reason: string) =>
    Validations.of(stack).acknowledge({ id: `AwsSolutions::AwsSolutions-${id}`, reason });
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
