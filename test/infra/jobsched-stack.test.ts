import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Match, Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import {
  DISPATCHER_MAX_CONCURRENCY,
  FUNCTION_MEMORY_MB,
  FUNCTION_TIMEOUT_SECONDS,
} from "../../lambdas/definitions/functions";
import { PUSH_QUEUE, RUN_QUEUE, SWEEP_QUEUE } from "../../lambdas/definitions/queues";
import { ROUTES } from "../../lambdas/definitions/routes";
import { JOBS_TABLE } from "../../lambdas/definitions/table";
import { JobschedStack } from "../../lib/jobsched-stack";
import { createTableInput } from "../../local/bootstrap";
import { DEFAULT_STACK_LIMITS, stackLimitsFrom } from "../../packages/cdk/src/stack-limits";
import { testApp } from "../support/cdk-app";

describe("JobschedStack", () => {
  let template: Template;

  beforeAll(() => {
    // Skip esbuild bundling: these tests check the CloudFormation, not the code bundles.
    const app = testApp();
    template = Template.fromStack(new JobschedStack(app, "Test"));
  });

  it("builds the table from the shared definition, exactly as the local bootstrap does", () => {
    const local = createTableInput("ignored");
    const [table] = Object.values(template.findResources("AWS::DynamoDB::GlobalTable"));
    const props = table?.Properties as Record<string, unknown>;
    expect(props.KeySchema).toEqual(local.KeySchema);
    const sortByName = <T extends { AttributeName?: string; IndexName?: string }>(items: T[]) =>
      [...items].sort((a, b) =>
        String(a.AttributeName ?? a.IndexName).localeCompare(String(b.AttributeName ?? b.IndexName)),
      );
    expect(sortByName(props.AttributeDefinitions as [])).toEqual(
      sortByName(local.AttributeDefinitions as []),
    );
    const indexes = (props.GlobalSecondaryIndexes as Array<Record<string, unknown>>).map((i) => ({
      IndexName: i.IndexName,
      KeySchema: i.KeySchema,
      Projection: i.Projection,
    }));
    expect(sortByName(indexes as [])).toEqual(sortByName(local.GlobalSecondaryIndexes as []));
    expect(indexes).toHaveLength(JOBS_TABLE.indexes.length);
  });

  it("keeps the table safe: on demand, point-in-time recovery, deletion protection, retained", () => {
    template.hasResource("AWS::DynamoDB::GlobalTable", {
      DeletionPolicy: "Retain",
      Properties: Match.objectLike({
        BillingMode: "PAY_PER_REQUEST",
        Replicas: [
          Match.objectLike({
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        ],
      }),
    });
  });

  it("creates the run queue with a dead-letter queue, encrypted, its visibility timeout the default lease", () => {
    // Runs and their dead letters, push runs, sweeps and their dead letters.
    template.resourceCountIs("AWS::SQS::Queue", 5);
    template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: RUN_QUEUE.visibilityTimeoutSeconds,
      SqsManagedSseEnabled: true,
      RedrivePolicy: {
        deadLetterTargetArn: Match.anyValue(),
        maxReceiveCount: RUN_QUEUE.deadLetter.maxReceiveCount,
      },
    });
  });

  it("fans the sweep out through SQS to a sweeper that reports partial batch failures", () => {
    template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: SWEEP_QUEUE.visibilityTimeoutSeconds,
      RedrivePolicy: {
        deadLetterTargetArn: Match.anyValue(),
        maxReceiveCount: SWEEP_QUEUE.deadLetter.maxReceiveCount,
      },
    });
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      BatchSize: 4,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
    });
  });

  it("runs five Lambdas on Node.js 22, arm64", () => {
    template.resourceCountIs("AWS::Lambda::Function", 5);
    for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
      expect(fn.Properties).toMatchObject({ Runtime: "nodejs22.x", Architectures: ["arm64"] });
    }
  });

  it("sizes each function from the shared memory table: the worker-facing one at 256 MB", () => {
    const memories = Object.values(template.findResources("AWS::Lambda::Function"))
      .map((fn) => (fn.Properties as { MemorySize: number }).MemorySize)
      .sort((a, b) => a - b);
    expect(memories).toEqual(Object.values(FUNCTION_MEMORY_MB).sort((a, b) => a - b));
    expect(FUNCTION_MEMORY_MB.internal).toBe(256);
    template.hasResourceProperties("AWS::Lambda::Function", {
      MemorySize: FUNCTION_MEMORY_MB.internal,
      Environment: { Variables: Match.objectLike({ WORKER_BINDINGS: Match.anyValue() }) },
    });
  });

  it("serves every route of the shared route list, each with IAM auth", () => {
    const routes = Object.values(template.findResources("AWS::ApiGatewayV2::Route")).map(
      (r) => r.Properties as { RouteKey: string; AuthorizationType: string },
    );
    expect(routes.map((r) => r.RouteKey).sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    for (const route of routes) expect(route.AuthorizationType).toBe("AWS_IAM");
  });

  it("ticks every minute, one rule per turn of the sweep, each naming its turn (decision 0056)", () => {
    const rules = Object.values(template.findResources("AWS::Events::Rule")).map(
      (r) => r.Properties as { ScheduleExpression: string; Targets: { Input: string }[] },
    );
    expect(
      rules.map((r) => [r.ScheduleExpression, r.Targets.map((t) => JSON.parse(t.Input) as unknown)]).sort(),
    ).toEqual([
      ["cron(0/2 * * * ? *)", [{ turn: 0 }]],
      ["cron(1/2 * * * ? *)", [{ turn: 1 }]],
    ]);
  });

  it("feeds the dispatcher from the push queue through an event source mapping, batches of 10, partial failures", () => {
    const pushQueue = Object.entries(template.findResources("AWS::SQS::Queue")).find(
      ([, queue]) =>
        (queue.Properties as { VisibilityTimeout?: number }).VisibilityTimeout ===
        PUSH_QUEUE.visibilityTimeoutSeconds,
    );
    expect(pushQueue).toBeDefined();
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [pushQueue?.[0], "Arn"] },
      FunctionName: { Ref: Match.stringLikeRegexp("Dispatcher") },
      BatchSize: 10,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      ScalingConfig: { MaximumConcurrency: DISPATCHER_MAX_CONCURRENCY },
    });
    template.hasResourceProperties("AWS::Lambda::Function", {
      MemorySize: FUNCTION_MEMORY_MB.dispatcher,
      Timeout: FUNCTION_TIMEOUT_SECONDS.dispatcher,
      Environment: { Variables: Match.objectLike({ PUSH_QUEUE_URL: { Ref: pushQueue?.[0] } }) },
    });
    // A queue that feeds a function must keep a message hidden at least as long as the function runs.
    expect(PUSH_QUEUE.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(FUNCTION_TIMEOUT_SECONDS.dispatcher);
  });

  it("keeps the push queue an SQS fair queue behind its mapping (decision 0039)", () => {
    const [id, pushQueue] =
      Object.entries(template.findResources("AWS::SQS::Queue")).find(
        ([, queue]) =>
          (queue.Properties as { VisibilityTimeout?: number }).VisibilityTimeout ===
          PUSH_QUEUE.visibilityTimeoutSeconds,
      ) ?? [];
    // A standard queue: messages with a MessageGroupId make it fair. On a FIFO queue the same id
    // would hand out one tenant's runs one at a time, in order.
    expect(pushQueue).toBeDefined();
    expect((pushQueue?.Properties ?? {}) as { FifoQueue?: boolean }).not.toHaveProperty("FifoQueue");
    // The mapping hands each visible message over at once, whichever tenant it is: no batching
    // window to hold a quiet tenant's run for a noisy one's, no filter (SQS deletes what a
    // filter drops), and scaled by maximum concurrency rather than provisioned pollers.
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [id, "Arn"] },
      MaximumBatchingWindowInSeconds: Match.absent(),
      FilterCriteria: Match.absent(),
      ProvisionedPollerConfig: Match.absent(),
      ScalingConfig: { MaximumConcurrency: DISPATCHER_MAX_CONCURRENCY },
    });
    // A tenant is noisy once it has at least 30 messages in flight and over a tenth of them:
    // the mapping must hold enough at once for a flood to stand out from a quiet tenant's runs.
    expect(DISPATCHER_MAX_CONCURRENCY * 10).toBeGreaterThanOrEqual(30 * 10);
  });

  it("lets the dispatcher assume only jobsched-target-* roles, with an external id and the tenant tag, and otherwise only touch the table and the push queue", () => {
    const [policy] = Object.entries(template.findResources("AWS::IAM::Policy")).filter(([id]) =>
      id.includes("Dispatcher"),
    );
    if (!policy) throw new Error("no dispatcher policy");
    const statements = (
      policy[1].Properties as {
        PolicyDocument: {
          Statement: Array<{ Action: string | string[]; Resource: unknown; Condition?: unknown }>;
        };
      }
    ).PolicyDocument.Statement;
    const actions = statements.flatMap((s) => [s.Action].flat()).sort();
    const sts = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith("sts:")));
    const targetRoles = {
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":iam::*:role/jobsched-target-*"]],
    };
    expect(sts).toEqual([
      {
        Action: "sts:AssumeRole",
        Effect: "Allow",
        Resource: targetRoles,
        Condition: { Null: { "sts:ExternalId": "false" } },
      },
      {
        Action: "sts:TagSession",
        Effect: "Allow",
        Resource: targetRoles,
        Condition: {
          Null: { "aws:RequestTag/jobsched-tenant": "false" },
          "ForAllValues:StringEquals": { "aws:TagKeys": ["jobsched-tenant"] },
        },
      },
    ]);
    expect(actions.filter((a) => !a.startsWith("dynamodb:") && !a.startsWith("sts:"))).toEqual(
      [
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        "sqs:ReceiveMessage",
        "sqs:SendMessage",
      ].sort(),
    );
    // Every SQS action is on the push queue alone: no lane, no other queue.
    for (const s of statements.filter((s) => [s.Action].flat().some((a) => a.startsWith("sqs:")))) {
      expect(JSON.stringify(s.Resource)).toMatch(/Push/);
    }
    const allowed = statements.filter((s) => (s as { Effect?: string }).Effect === "Allow");
    expect(allowed.flatMap((s) => [s.Action].flat())).not.toContain("dynamodb:Scan");
  });

  it("lets only the lease protocol assume the lane listener role, which may only receive from this stack's lanes (decision 0049)", () => {
    const roles = Object.entries(template.findResources("AWS::IAM::Role"));
    const listener = roles.find(([id]) => id.includes("LaneListener"));
    if (!listener) throw new Error("no lane listener role");
    const [listenerId, role] = listener;
    const internalRoleId = roles.find(([id]) => /Internal.*Role/.test(id))?.[0];
    if (!internalRoleId) throw new Error("no internal function role");
    expect(role.Properties.MaxSessionDuration).toBe(3600);
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: "sts:AssumeRole",
        Effect: "Allow",
        Principal: { AWS: { "Fn::GetAtt": [internalRoleId, "Arn"] } },
      },
    ]);
    const policiesOf = (roleId: string) =>
      Object.values(template.findResources("AWS::IAM::Policy"))
        .filter((p) => JSON.stringify(p.Properties.Roles).includes(roleId))
        .flatMap(
          (p) =>
            (p.Properties as { PolicyDocument: { Statement: Array<Record<string, unknown>> } }).PolicyDocument
              .Statement,
        );
    const own = policiesOf(listenerId);
    expect(own).toHaveLength(1);
    expect(own[0]?.Action).toBe("sqs:ReceiveMessage");
    // The lanes' pattern (`<run queue name>_*`), never the run queue or any other queue.
    expect(JSON.stringify(own[0]?.Resource)).toMatch(/_\*"/);
    const assumes = policiesOf(internalRoleId).filter((s) => s.Action === "sts:AssumeRole");
    expect(assumes).toEqual([
      { Action: "sts:AssumeRole", Effect: "Allow", Resource: { "Fn::GetAtt": [listenerId, "Arn"] } },
    ]);
    // No other function may assume it, and the lease protocol learns it from its environment.
    for (const [id] of roles.filter(([id]) => id !== internalRoleId && id !== listenerId)) {
      expect(JSON.stringify(policiesOf(id))).not.toContain(listenerId);
    }
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({ LANE_LISTENER_ROLE_ARN: { "Fn::GetAtt": [listenerId, "Arn"] } }),
      },
    });
  });

  it("exports the dispatcher's role ARN for tenants' trust policies", () => {
    template.hasOutput("DispatcherRoleArn", {
      Export: { Name: Match.anyValue() },
      Value: { "Fn::GetAtt": [Match.stringLikeRegexp("Dispatcher.*Role"), "Arn"] },
    });
  });

  it("grants no wildcard actions", () => {
    for (const policy of Object.values(template.findResources("AWS::IAM::Policy"))) {
      const statements = (policy.Properties as { PolicyDocument: { Statement: Array<{ Action: unknown }> } })
        .PolicyDocument.Statement;
      for (const { Action } of statements) {
        for (const action of [Action].flat()) expect(String(action)).not.toMatch(/\*/);
      }
    }
  });

  it("gives the sweep queue six times the sweeper's timeout of visibility, as AWS advises", () => {
    expect(SWEEP_QUEUE.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * FUNCTION_TIMEOUT_SECONDS.sweeper);
    template.hasResourceProperties("AWS::Lambda::Function", { Timeout: FUNCTION_TIMEOUT_SECONDS.sweeper });
    template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: 6 * FUNCTION_TIMEOUT_SECONDS.sweeper,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: SWEEP_QUEUE.deadLetter.maxReceiveCount }),
    });
  });

  it("throttles the API stage", () => {
    template.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
      DefaultRouteSettings: Match.objectLike({
        ThrottlingRateLimit: DEFAULT_STACK_LIMITS.apiRateLimit,
        ThrottlingBurstLimit: DEFAULT_STACK_LIMITS.apiBurstLimit,
      }),
    });
  });

  it("reserves concurrency for the tick, the sweeper and the worker protocol, not for the tenant API", () => {
    const reserved = Object.values(template.findResources("AWS::Lambda::Function"))
      .map((f) => (f.Properties as { ReservedConcurrentExecutions?: number }).ReservedConcurrentExecutions)
      .filter((n) => n !== undefined)
      .sort((a, b) => (a as number) - (b as number));
    const { tick, sweeper, internal } = DEFAULT_STACK_LIMITS.reservedConcurrency;
    expect(reserved).toEqual([tick, sweeper, internal].sort((a, b) => a - b));
    template.hasResourceProperties("AWS::Lambda::Function", {
      MemorySize: FUNCTION_MEMORY_MB.internal,
      ReservedConcurrentExecutions: internal,
    });
    template.hasResourceProperties("AWS::Lambda::Function", {
      Timeout: FUNCTION_TIMEOUT_SECONDS.tick,
      ReservedConcurrentExecutions: tick,
    });
  });

  it("keeps every function's logs, and the API's access log, for the configured retention", () => {
    const groups = Object.values(template.findResources("AWS::Logs::LogGroup")).map(
      (g) => (g.Properties as { RetentionInDays?: number }).RetentionInDays,
    );
    expect(groups).toHaveLength(6); // five functions and the access log
    for (const days of groups) expect(days).toBe(DEFAULT_STACK_LIMITS.logRetentionDays);
    for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
      expect(
        (fn.Properties as { LoggingConfig?: { LogGroup?: unknown } }).LoggingConfig?.LogGroup,
      ).toBeDefined();
    }
  });

  it("encrypts the alarm topic with a rotated key that CloudWatch may use", () => {
    template.hasResourceProperties("AWS::SNS::Topic", { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties("AWS::KMS::Key", {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: "cloudwatch.amazonaws.com" },
            Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
          }),
        ]),
      },
    });
  });
});

describe("stack limits from CDK context", () => {
  const from = (values: Record<string, unknown>) => stackLimitsFrom((name) => values[name]);

  it("takes the defaults when nothing is set, and each setting as numbers or text", () => {
    expect(from({})).toEqual(DEFAULT_STACK_LIMITS);
    expect(
      from({
        logRetentionDays: "30",
        apiRateLimit: 50,
        apiBurstLimit: "100",
        reservedConcurrency: '{"internal": 0}',
      }),
    ).toEqual({
      logRetentionDays: 30,
      apiRateLimit: 50,
      apiBurstLimit: 100,
      reservedConcurrency: { ...DEFAULT_STACK_LIMITS.reservedConcurrency, internal: 0 },
    });
    expect(from({ reservedConcurrency: { tick: 1, sweeper: 0 } }).reservedConcurrency).toEqual({
      tick: 1,
      sweeper: 0,
      internal: DEFAULT_STACK_LIMITS.reservedConcurrency.internal,
    });
  });

  it("stops the synth on a malformed setting, naming it", () => {
    expect(() => from({ logRetentionDays: 42 })).toThrow(
      /jobsched:logRetentionDays: CloudWatch Logs keeps logs for one of/,
    );
    expect(() => from({ apiRateLimit: "fast" })).toThrow(/jobsched:apiRateLimit: must be a whole number/);
    expect(() => from({ apiBurstLimit: 0 })).toThrow(/jobsched:apiBurstLimit/);
    expect(() => from({ reservedConcurrency: "{" })).toThrow(
      /jobsched:reservedConcurrency: must be an object/,
    );
    expect(() => from({ reservedConcurrency: { api: 5 } })).toThrow(/unknown function "api"/);
    expect(() => from({ reservedConcurrency: { tick: -1 } })).toThrow(/reservedConcurrency.tick/);
  });
});

describe("JobschedStack, a thin user of the JobScheduler construct (decision 0061)", () => {
  it("keeps every resource's and output's logical id from before the construct (a deployed stack updates in place)", () => {
    // Written by the stack as it was before the construct package (dde2259), not by this code.
    const before = JSON.parse(
      readFileSync(resolve(import.meta.dirname, "../fixtures/stack-logical-ids.json"), "utf8"),
    ) as { resources: Record<string, string>; outputs: string[] };
    const now = Template.fromStack(new JobschedStack(testApp(), "Jobsched")).toJSON() as {
      Resources: Record<string, { Type: string }>;
      Outputs: Record<string, unknown>;
    };
    expect(Object.fromEntries(Object.entries(now.Resources).map(([id, r]) => [id, r.Type]))).toEqual(
      before.resources,
    );
    expect(Object.keys(now.Outputs).sort()).toEqual(before.outputs);
  });
});
