import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { App } from "aws-cdk-lib";

/**
 * A CDK app as `cdk synth` builds it: with cdk.json's context (its feature flags change the
 * template, e.g. minimized IAM policies), without bundling the Lambdas (tests need no assets).
 */
const cdkJson = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../cdk.json"), "utf8")) as {
  context?: Record<string, unknown>;
};

export function testApp(context: Record<string, unknown> = {}): App {
  return new App({ context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [], ...context } });
}
