import { type CfnElement, Stack, Validations } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { AccountRootPrincipal, Role } from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { RemindersStack } from "../../examples/cdk-app/lib/reminders-stack";
import { JobScheduler } from "../../packages/cdk/src/index";
import { testApp } from "../support/cdk-app";

/**
 * The sample consumer app (examples/cdk-app, issue 29): a team's own stack with a JobScheduler
 * beside its own resources, synthesized from the construct's sources with cdk-nag's
 * AwsSolutions checks over the whole app. (`npm run test:packages` synthesizes the same app
 * from the packed tarball with `cdk synth`.)
 */
describe("the sample app: JobScheduler in a team's own stack", () => {
  it("synthesizes cdk-nag clean, the scheduler beside the team's queue and role, wired together", () => {
    const app = testApp();
    const stack = new RemindersStack(app, "Reminders");
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();

    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::Lambda::Function", 5);
    template.resourceCountIs("AWS::ApiGatewayV2::Api", 1);
    template.hasResourceProperties("AWS::SQS::Queue", {
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 5 }),
    });
    // The team's service role carries the scheduler's tenant policy.
    const [tenantPolicy] = Object.keys(
      template.findResources("AWS::IAM::ManagedPolicy", {
        Properties: { Description: Match.stringLikeRegexp("tenant client") },
      }),
    );
    template.hasResourceProperties("AWS::IAM::Role", {
      Description: Match.stringLikeRegexp("reminders service"),
      ManagedPolicyArns: [{ Ref: tenantPolicy }],
    });
    // The settings given in code reach the Lambdas.
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({ RUN_RETENTION_DAYS: "30", TENANT_CREATES_PER_SECOND: "50" }),
      },
    });
    // Outputs are the app's own: the construct adds none unless asked.
    expect(Object.keys(template.toJSON().Outputs).sort()).toEqual([
      "DispatcherRoleArn",
      "RemindersQueueUrl",
      "SchedulerUrl",
    ]);
  });

  it("fails the synth on a finding of the team's own that nobody acknowledged (the check can fail)", () => {
    const app = testApp();
    const stack = new RemindersStack(app, "Reminders");
    const role = new Role(stack, "Wide", { assumedBy: stack.scheduler.dispatcherRole });
    stack.scheduler.grantTenantAccess(role); // a route wildcard on the team's own role: IAM5
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow(/AwsSolutions-IAM5/);
  });

  it("refuses a setting the Lambdas would refuse, naming the prop", () => {
    const app = testApp();
    expect(() => new RemindersStack(app, "Bad", { schedulerSettings: { leaseSeconds: 0 } })).toThrow(
      /settings\.leaseSeconds/,
    );
  });
});

describe("JobScheduler's props and grants", () => {
  it("checks limits given in code, refuses unknown settings, a bad lateness, and a second scheduler in one stack", () => {
    const build = (props: ConstructorParameters<typeof JobScheduler>[2]) => () =>
      new JobScheduler(new Stack(testApp(), "S"), "Scheduler", props);
    expect(build({ limits: { logRetentionDays: 45 } })).toThrow(
      /^limits\.logRetentionDays: CloudWatch Logs keeps/,
    );
    expect(build({ limits: { reservedConcurrency: { tick: -1, sweeper: 32, internal: 300 } } })).toThrow(
      /limits\.reservedConcurrency\.tick: must be a whole number of at least 0/,
    );
    expect(build({ settings: { leaseSecond: 30 } as Record<string, number> })).toThrow(
      /settings: unknown "leaseSecond"/,
    );
    expect(build({ latenessAlarmSeconds: 0 })).toThrow(/latenessAlarmSeconds: must be a positive number/);
    const stack = new Stack(testApp(), "Two");
    new JobScheduler(stack, "First");
    expect(() => new JobScheduler(stack, "Second")).toThrow(/one JobScheduler per stack/);
    // What is given is used; the rest are the defaults.
    const limited = new Stack(testApp(), "Limited");
    new JobScheduler(limited, "Scheduler", { limits: { logRetentionDays: 30 } });
    Template.fromStack(limited).hasResourceProperties("AWS::Logs::LogGroup", { RetentionInDays: 30 });
  });

  it("grants a tenant the API and denies it the lease protocol, as the tenant policy does", () => {
    const stack = new Stack(testApp(), "Granted");
    const scheduler = new JobScheduler(stack, "Scheduler");
    const role = new Role(stack, "Service", { assumedBy: new AccountRootPrincipal() });
    scheduler.grantTenantAccess(role);
    const [policy] = Object.values(
      Template.fromStack(stack).findResources("AWS::IAM::Policy", {
        Properties: { Roles: [{ Ref: stack.getLogicalId(role.node.defaultChild as CfnElement) }] },
      }),
    );
    const statements = (
      policy as {
        Properties: { PolicyDocument: { Statement: Array<{ Effect: string; Resource: unknown }> } };
      }
    ).Properties.PolicyDocument.Statement;
    expect(statements.map((s) => s.Effect).sort()).toEqual(["Allow", "Deny"]);
    expect(JSON.stringify(statements.find((s) => s.Effect === "Deny")?.Resource)).toContain("/internal/*");
    expect(JSON.stringify(statements.find((s) => s.Effect === "Allow")?.Resource)).toContain("/api/*");
  });
});
