import { Match, Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { FUNCTION_MEMORY_MB, FUNCTION_TIMEOUT_SECONDS } from "../../lambdas/definitions/functions";
import { RUN_QUEUE, SWEEP_QUEUE } from "../../lambdas/definitions/queues";
import { ROUTES } from "../../lambdas/definitions/routes";
import { JOBS_TABLE } from "../../lambdas/definitions/table";
import { JobschedStack } from "../../lib/jobsched-stack";
import { DEFAULT_STACK_LIMITS, stackLimitsFrom } from "../../lib/stack-limits";
import { createTableInput } from "../../local/bootstrap";
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
    template.resourceCountIs("AWS::SQS::Queue", 4);
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

  it("runs four Lambdas on Node.js 22, arm64", () => {
    template.resourceCountIs("AWS::Lambda::Function", 4);
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

  it("ticks every minute", () => {
    template.hasResourceProperties("AWS::Events::Rule", { ScheduleExpression: "rate(1 minute)" });
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
    expect(groups).toHaveLength(5); // four functions and the access log
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
