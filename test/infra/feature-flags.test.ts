import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { JobschedStack } from "../../lib/jobsched-stack";
import { testApp } from "../support/cdk-app";

/**
 * cdk.json sets the CDK's recommended feature flags, as `cdk init` writes them for a new app
 * (issue 16; `npx cdk flags --unstable=flags` lists them). Against the legacy defaults they
 * changed one thing in this stack's template: every function's IAM policy is minimized (merged
 * statements, sorted actions). The flags that matter here are pinned by this test.
 */
const context = (
  JSON.parse(readFileSync(resolve(import.meta.dirname, "../../cdk.json"), "utf8")) as {
    context: Record<string, unknown>;
  }
).context;

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

describe("the CDK feature flags", () => {
  it("are set as recommended, the ones that shape this stack among them", () => {
    for (const flag of [
      "@aws-cdk/aws-iam:minimizePolicies",
      "@aws-cdk/aws-lambda:useCdkManagedLogGroup",
      "@aws-cdk/core:validateSnapshotRemovalPolicy",
      "@aws-cdk/aws-lambda:recognizeVersionProps",
      "@aws-cdk/core:checkSecretUsage",
    ]) {
      expect(context[flag], flag).toBe(true);
    }
    const flags = Object.keys(context).filter((key) => key.startsWith("@aws-cdk"));
    expect(flags.length).toBeGreaterThan(80);
  });

  it("minimize each function's policy: one statement per set of resources and conditions, actions sorted, none twice", () => {
    const template = Template.fromStack(new JobschedStack(testApp(), "Flags", {}));
    const policies = Object.entries(template.findResources("AWS::IAM::Policy")).filter(([id]) =>
      id.startsWith("Functions"),
    );
    expect(policies.length).toBeGreaterThanOrEqual(4);
    for (const [id, policy] of policies) {
      const statements = (policy.Properties as { PolicyDocument: { Statement: Statement[] } }).PolicyDocument
        .Statement;
      // Statements of another effect or under other conditions stay apart (the dispatcher's two
      // on target roles, the denies on the webhook secrets).
      const resources = statements.map((s) => JSON.stringify([s.Effect, s.Resource, s.Condition]));
      expect(new Set(resources).size, id).toBe(resources.length);
      for (const s of statements) {
        const actions = [s.Action].flat();
        expect(actions, id).toEqual([...new Set(actions)].sort());
      }
    }
  });
});
