import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { CLOUD_SETTINGS } from "../../lambdas/definitions/settings";
import { stackPropsFromContext } from "../../lib/app-config";
import { JobschedStack } from "../../lib/jobsched-stack";
import { testApp } from "../support/cdk-app";

/** The CDK app's context, read by lib/app-config.ts through the one settings schema (issue 16). */
const fromContext = (context: Record<string, unknown>) => stackPropsFromContext((name) => context[name]);

describe("the CDK context", () => {
  it("gives the defaults when nothing is set, and each setting by its own key, as text or number", () => {
    expect(fromContext({}).settings).toEqual(CLOUD_SETTINGS);
    const props = fromContext({
      "jobsched:leaseSeconds": "45",
      "jobsched:idleLaneDays": 0,
      "jobsched:tickSeconds": 120,
      "jobsched:sweepEveryTicks": "1",
    });
    expect(props.settings).toEqual({
      ...CLOUD_SETTINGS,
      leaseSeconds: 45,
      idleLaneDays: 0,
      tickSeconds: 120,
      sweepEveryTicks: 1,
    });
  });

  it("reads jobsched:webhookPorts from a cdk.json array or -c text, and gives it to the Lambdas", () => {
    expect(fromContext({ "jobsched:webhookPorts": [443, 8443] }).settings?.webhookPorts).toEqual([443, 8443]);
    expect(fromContext({ "jobsched:webhookPorts": "443,8443" }).settings?.webhookPorts).toEqual([443, 8443]);
    expect(() => fromContext({ "jobsched:webhookPorts": "443,https" })).toThrow(
      /context jobsched:webhookPorts: must be a number/,
    );
    const stack = new JobschedStack(
      testApp(),
      "Ports",
      fromContext({ "jobsched:webhookPorts": [443, 8443] }),
    );
    const functions = Template.fromStack(stack).findResources("AWS::Lambda::Function", {
      Properties: { Environment: { Variables: Match.objectLike({ WEBHOOK_PORTS: "443,8443" }) } },
    });
    expect(Object.keys(functions).length).toBeGreaterThan(0);
  });

  it("stops the synth on a value the Lambdas would refuse, naming the context key", () => {
    expect(() => fromContext({ "jobsched:leaseSeconds": "-1" })).toThrow(
      /context jobsched:leaseSeconds: must be at least 1/,
    );
    // A group swept every 2 x 120 s would let runs fall between sweeps that look 150 s ahead.
    expect(() => fromContext({ "jobsched:tickSeconds": 120 })).toThrow(
      /context jobsched:lookaheadSeconds: must be at least a group's sweep period .* plus the 5 s delivery lead/,
    );
    expect(() => fromContext({ "jobsched:tickSeconds": 30 })).toThrow(
      /context jobsched:tickSeconds: EventBridge cannot tick more often than every 60 s/,
    );
    expect(() => fromContext({ "jobsched:allowPrivateTargets": 1 })).toThrow(
      /context jobsched:allowPrivateTargets: must be 0 in AWS/,
    );
    expect(() => fromContext({ "jobsched:latenessAlarmSeconds": "never" })).toThrow(/latenessAlarmSeconds/);
    expect(() => fromContext({ "jobsched:logRetentionDays": 8 })).toThrow(/logRetentionDays/);
  });

  it("holds settings given in code to the same schema", () => {
    const app = testApp();
    expect(() => new JobschedStack(app, "Bad", { settings: { maxPayloadBytes: 10_000_000 } })).toThrow(
      /settings.maxPayloadBytes: must be at most 262144/,
    );
  });

  it("passes jobsched:tenantAccounts to the API and the dispatcher, warns of mapped tenants without any, refuses bad ones", () => {
    const accounts = { billing: ["123456789012"] };
    const mapping = {
      "arn:aws:iam::123456789012:role/cron": "billing",
      "arn:aws:iam::123456789012:role/ops": "ops",
    };
    const stack = new JobschedStack(
      testApp(),
      "Accounts",
      fromContext({ "jobsched:tenantAccounts": JSON.stringify(accounts), "jobsched:tenantMapping": mapping }),
    );
    const functions = Template.fromStack(stack).findResources("AWS::Lambda::Function", {
      Properties: {
        Environment: { Variables: Match.objectLike({ TENANT_ACCOUNTS: JSON.stringify(accounts) }) },
      },
    });
    expect(
      Object.keys(functions)
        .map((id) => id.replace(/Functions|[0-9A-F]{8}$/g, ""))
        .sort(),
    ).toEqual(["Api", "Dispatcher"]);
    Annotations.fromStack(stack).hasWarning(
      "*",
      Match.stringLikeRegexp("Mapped tenants with no accounts .*: ops;"),
    );
    expect(
      () =>
        new JobschedStack(
          testApp(),
          "Bad",
          fromContext({ "jobsched:tenantAccounts": '{"billing": ["12"]}' }),
        ),
    ).toThrow(/context jobsched:tenantAccounts "billing.0": must be a 12-digit AWS account id/);
  });

  it("passes jobsched:tenantMapping to the API and lease functions, and refuses one that is not valid", () => {
    const mapping = { "arn:aws:iam::123456789012:role/cron": "billing" };
    const app = testApp();
    const stack = new JobschedStack(
      app,
      "Mapped",
      fromContext({ "jobsched:tenantMapping": JSON.stringify(mapping) }),
    );
    const functions = Template.fromStack(stack).findResources("AWS::Lambda::Function", {
      Properties: {
        Environment: { Variables: Match.objectLike({ TENANT_MAPPING: JSON.stringify(mapping) }) },
      },
    });
    expect(
      Object.keys(functions)
        .map((id) => id.replace(/Functions|[0-9A-F]{8}$/g, ""))
        .sort(),
    ).toEqual(["Api", "Internal"]);
    // From the context, the error names the context key; given in code, the construct's prop.
    expect(() =>
      fromContext({ "jobsched:tenantMapping": { "arn:aws:iam::123456789012:role/x": "" } }),
    ).toThrow(/context jobsched:tenantMapping ".*": a tenant name must not be empty/);
    expect(
      () =>
        new JobschedStack(testApp(), "Bad", { tenantMapping: { "arn:aws:iam::123456789012:role/x": "" } }),
    ).toThrow(/^tenantMapping ".*": a tenant name must not be empty/);
  });
});
