import { Validations } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Role } from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { RemindersStack } from "../../examples/cdk-app/lib/reminders-stack";
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
