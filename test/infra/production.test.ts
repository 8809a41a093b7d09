import { Stack, Validations } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Queue } from "aws-cdk-lib/aws-sqs";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { JOBS_TABLE } from "../../lambdas/definitions/table";
import { JobschedStack } from "../../lib/jobsched-stack";
import { testApp } from "../support/cdk-app";

/** Issue 7: what a careful AWS engineer checks before `cdk deploy`. */
const app = (context: Record<string, unknown> = {}) => testApp(context);

describe("the production stack", () => {
  let template: Template;

  beforeAll(() => {
    template = Template.fromStack(new JobschedStack(app(), "Prod", { alarmEmail: "ops@example.com" }));
  });

  it("passes cdk-nag's AwsSolutions checks: every finding is acknowledged with a reason", () => {
    const a = app();
    new JobschedStack(a, "Nagged");
    Validations.of(a).addPlugins(new AwsSolutionsChecks(a));
    expect(() => a.synth()).not.toThrow();
  });

  it("fails synthesis on a finding nobody acknowledged (the check can fail)", () => {
    const a = app();
    const stack = new Stack(a, "Careless");
    new Queue(stack, "NoDlqNoTls"); // AwsSolutions-SQS3 and SQS4
    Validations.of(a).addPlugins(new AwsSolutionsChecks(a));
    expect(() => a.synth()).toThrow(/AwsSolutions-SQS/);
  });

  it("alarms on dead letters, queues SQS gave up on, sweep and tick errors, late sweeps and late runs", () => {
    const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm")).map(
      (a) => a.Properties as Record<string, unknown>,
    );
    const metricNames = alarms.map((a) => a.MetricName);
    expect(metricNames).toEqual(
      expect.arrayContaining([
        "DeadLetterDepth",
        "ApproximateNumberOfMessagesVisible",
        "Errors",
        "EnqueueLatenessP99",
        "StartLateness",
      ]),
    );
    expect(alarms).toHaveLength(7);
    const topic = Object.keys(template.findResources("AWS::SNS::Topic"))[0];
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([{ Ref: topic }]);
    template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: "ops@example.com",
    });
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "StartLateness",
      ExtendedStatistic: "p99",
      Threshold: 10_000,
    });
  });

  it("has a dashboard of runs created, leased, succeeded, retried, dead-lettered, lost and lateness percentiles", () => {
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(dashboard?.Properties);
    for (const name of [
      "RunsCreated",
      "RunsLeased",
      "RunsSucceeded",
      "RunsRetried",
      "RunsDeadLettered",
      "RunsLost",
      "p99",
    ]) {
      expect(body).toContain(name);
    }
  });

  it("exports one managed policy for tenant clients (/api/*) and one for workers (/internal/*)", () => {
    const policies = Object.values(template.findResources("AWS::IAM::ManagedPolicy")).map((p) =>
      JSON.stringify(p.Properties),
    );
    expect(policies).toHaveLength(2);
    expect(policies.some((p) => p.includes('"/*/*/api/*"') && p.includes("execute-api:Invoke"))).toBe(true);
    expect(policies.some((p) => p.includes('"/*/*/internal/*"') && p.includes("execute-api:Invoke"))).toBe(
      true,
    );
    const outputs = Object.keys(template.findOutputs("*"));
    expect(outputs.filter((o) => /TenantPolicyArn|WorkerPolicyArn|Url/.test(o))).toHaveLength(3);
  });

  it("denies tenants the lease protocol (/internal/*) outright in the tenant policy", () => {
    const policies = Object.values(template.findResources("AWS::IAM::ManagedPolicy")).map(
      (p) =>
        p.Properties as {
          Description: string;
          PolicyDocument: { Statement: Array<Record<string, unknown>> };
        },
    );
    const tenant = policies.find((p) => p.Description.includes("tenant"));
    const deny = tenant?.PolicyDocument.Statement.filter((s) => s.Effect === "Deny") ?? [];
    expect(deny).toHaveLength(1);
    expect(deny[0]?.Action).toBe("execute-api:Invoke");
    expect(JSON.stringify(deny[0]?.Resource)).toContain('"/*/*/internal/*"');
    const worker = policies.find((p) => p.Description.includes("worker"));
    expect(JSON.stringify(worker?.PolicyDocument)).not.toContain("Deny");
  });

  it("gives the lease function, and only it, the worker bindings", () => {
    const bound = Template.fromStack(
      new JobschedStack(app(), "Bound", {
        workers: {
          "arn:aws:iam::123456789012:role/billing-worker": ["arn:aws:iam::123456789012:role/billing"],
          "arn:aws:iam::123456789012:role/pool": ["billing", "reports"],
        },
      }),
    );
    const functions = Object.values(bound.findResources("AWS::Lambda::Function")).map(
      (f) => (f.Properties as { Environment: { Variables: Record<string, string> } }).Environment.Variables,
    );
    const withBindings = functions.filter((v) => v.WORKER_BINDINGS !== undefined);
    expect(withBindings).toHaveLength(1);
    expect(JSON.parse(withBindings[0]?.WORKER_BINDINGS ?? "")).toEqual({
      "arn:aws:iam::123456789012:role/billing-worker": ["arn:aws:iam::123456789012:role/billing"],
      "arn:aws:iam::123456789012:role/pool": ["billing", "reports"],
    });
  });

  it("refuses to synth a worker binding that names no tenant, or is not a principal ARN", () => {
    // Given in code as the construct's prop: errors name the prop (the app's context key is checked in app-config).
    const build = (workers: unknown) => () =>
      new JobschedStack(app(), "Bad", { workers: workers as Record<string, string[]> });
    expect(build({ "arn:aws:iam::123456789012:role/w": [] })).toThrow(
      /workers "arn:aws:iam::123456789012:role\/w": names no tenant/,
    );
    expect(build({ "arn:aws:iam::123456789012:role/w": [""] })).toThrow(/must not be empty/);
    expect(build({ "billing-worker": ["billing"] })).toThrow(/must be an IAM principal ARN/);
    expect(build('{"arn:aws:iam::123456789012:role/w": ')).toThrow(/not valid JSON/);
    expect(build('{"arn:aws:iam::123456789012:role/w": ["t"]}')).not.toThrow(); // -c passes JSON text
  });

  it("refuses bindings too large for Lambda's 4 KB of environment", () => {
    const workers = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [
        `arn:aws:iam::123456789012:role/worker-${i}`,
        [`arn:aws:iam::123456789012:role/tenant-${i}`],
      ]),
    );
    expect(() => new JobschedStack(app(), "Huge", { workers })).toThrow(/over Lambda's 4 KB/);
  });

  it("logs every API call to an access log", () => {
    template.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
      StageName: "$default",
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
    });
  });

  it("expires rate-limit counters through the table's TTL", () => {
    template.hasResourceProperties("AWS::DynamoDB::GlobalTable", {
      TimeToLiveSpecification: { AttributeName: JOBS_TABLE.timeToLiveAttribute, Enabled: true },
    });
  });

  it("grants the lease protocol exactly the lane actions it uses, on this stack's lanes only", () => {
    const statements = Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
      (p) =>
        (p.Properties as { PolicyDocument: { Statement: Array<{ Action: string[]; Resource: unknown }> } })
          .PolicyDocument.Statement,
    );
    const all = statements.filter(
      (s) =>
        JSON.stringify(s.Resource).includes(":Prod-runs_*") && ![s.Action].flat().includes("sqs:DeleteQueue"),
    );
    // The lane listener role (decision 0049) only receives: idle workers' peeks.
    const listener = all.filter((s) => [s.Action].flat().join() === "sqs:ReceiveMessage");
    expect(listener).toHaveLength(1);
    const lanes = all.filter((s) => !listener.includes(s));
    expect(lanes).toHaveLength(4); // api, tick and sweeper send; internal sends and receives
    expect(lanes.filter((s) => [s.Action].flat().includes("sqs:ReceiveMessage"))).toHaveLength(1);
    for (const s of lanes) expect([s.Action].flat()).toContain("sqs:SendMessage");
    // The pattern is `<run queue>_*`: no queue of a stack named "Prod-runs..." can match it (stack
    // names have no underscore); the run queue itself, the lanes' template, by its own ARN.
    expect(JSON.stringify(statements)).not.toMatch(/:Prod-runs\*/);
    for (const s of lanes) expect(JSON.stringify(s.Resource)).toContain("Fn::GetAtt");
  });

  it("lets the tick alone delete queues, and only this stack's lanes (idle lanes), never the run queue", () => {
    const policies = Object.entries(template.findResources("AWS::IAM::Policy")).map(([id, p]) => ({
      id,
      statements: (
        p.Properties as {
          PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> };
        }
      ).PolicyDocument.Statement,
    }));
    const deleting = policies.flatMap(({ id, statements }) =>
      statements.filter((s) => [s.Action].flat().includes("sqs:DeleteQueue")).map((s) => ({ id, s })),
    );
    expect(deleting).toHaveLength(1);
    expect(deleting[0]?.id).toMatch(/Tick/);
    expect([deleting[0]?.s.Action].flat()).toEqual(["sqs:DeleteQueue"]);
    const resource = JSON.stringify(deleting[0]?.s.Resource);
    expect(resource).toContain(":Prod-runs_*");
    expect(resource).not.toContain("Fn::GetAtt"); // not the run queue
  });

  it("names the run queue after the stack, a long name cut and hashed so that no two stacks share it", () => {
    const long = "Jobsched-production-eu-west-1-payments-team-a";
    const twin = "Jobsched-production-eu-west-1-payments-team-b";
    const names = [long, twin].map((name) => {
      const queues = Template.fromStack(new JobschedStack(app(), name, {})).findResources("AWS::SQS::Queue");
      return Object.values(queues)
        .map((q) => (q.Properties as { QueueName?: string }).QueueName)
        .find((n) => n?.endsWith("-runs"));
    });
    expect(names[0]).toMatch(/^Jobsched-production-eu-west-1-p-[0-9a-f]{8}-runs$/);
    expect(names[1]).not.toBe(names[0]);
    // Room for `_`, a lane's hash (16) and its generation (`-` and up to 7 digits).
    expect(names[0]?.length).toBeLessThanOrEqual(80 - 17 - 8);
  });

  it("takes its settings from the CDK context", () => {
    const stack = new JobschedStack(app(), "Tuned", {
      settings: { tickSeconds: 120, sweepEveryTicks: 1, leaseSeconds: 45 },
    });
    const tuned = Template.fromStack(stack);
    tuned.hasResourceProperties("AWS::Events::Rule", { ScheduleExpression: "rate(2 minutes)" });
    tuned.hasResourceProperties("AWS::Lambda::Function", {
      Environment: { Variables: Match.objectLike({ LEASE_SECONDS: "45" }) },
    });
  });
});
