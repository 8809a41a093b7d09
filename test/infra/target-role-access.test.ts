import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { tenantTagValue } from "../../lambdas/adapters/targets/tenant-session-tag";
import { JobschedStack } from "../../lib/jobsched-stack";
import { testApp } from "../support/cdk-app";
import { evaluate, type Statement, statementsOfFunction } from "../support/iam-evaluator";

/**
 * Issue 27, finding 6 (the confused deputy): which roles the dispatcher's own policy lets it
 * assume, and what the trust policy docs/deploy.md gives tenants lets in, both evaluated as
 * IAM evaluates them (test/support/iam-evaluator.ts), not only compared as text.
 */
const TENANT = "arn:aws:iam::111122223333:role/Billing";
const assume = (roleArn: string, context: Record<string, string | string[]> = {}) => ({
  action: "sts:AssumeRole",
  resource: roleArn,
  context,
});
const tag = (roleArn: string, tags: Record<string, string>) => ({
  action: "sts:TagSession",
  resource: roleArn,
  context: {
    ...Object.fromEntries(Object.entries(tags).map(([key, value]) => [`aws:RequestTag/${key}`, value])),
    "aws:TagKeys": Object.keys(tags),
  },
});

describe("the dispatcher's policy on target roles", () => {
  let dispatcher: Statement[];

  beforeAll(() => {
    dispatcher = statementsOfFunction(
      Template.fromStack(new JobschedStack(testApp(), "Roles")),
      "FunctionsDispatcher",
    );
  });

  it("assumes only roles named jobsched-target-*, in any account, and only with an external id", () => {
    const withId = { "sts:ExternalId": TENANT };
    expect(
      evaluate(dispatcher, assume("arn:aws:iam::111122223333:role/jobsched-target-reminders", withId)),
    ).toBe("allow");
    expect(evaluate(dispatcher, assume("arn:aws:iam::444455556666:role/jobsched-target-x", withId))).toBe(
      "allow",
    );
    // A role that trusts the deployment's account root (an admin role, a tenant's API role): out of reach.
    for (const role of ["Admin", "jobsched-billing", "jobsched-worker", "OrganizationAccountAccessRole"]) {
      expect(evaluate(dispatcher, assume(`arn:aws:iam::111122223333:role/${role}`, withId)), role).toBe(
        "implicit-deny",
      );
    }
    expect(evaluate(dispatcher, assume("arn:aws:iam::111122223333:role/jobsched-target-reminders"))).toBe(
      "implicit-deny",
    );
  });

  it("tags its sessions with jobsched-tenant and nothing else", () => {
    const role = "arn:aws:iam::111122223333:role/jobsched-target-reminders";
    expect(evaluate(dispatcher, tag(role, { "jobsched-tenant": tenantTagValue(TENANT) }))).toBe("allow");
    expect(evaluate(dispatcher, tag(role, { "jobsched-tenant": "t", team: "ops" }))).toBe("implicit-deny");
    expect(evaluate(dispatcher, tag(role, { team: "ops" }))).toBe("implicit-deny");
    expect(
      evaluate(dispatcher, tag("arn:aws:iam::111122223333:role/Admin", { "jobsched-tenant": "t" })),
    ).toBe("implicit-deny");
  });

  it("takes the role-name pattern from CDK context", () => {
    const custom = statementsOfFunction(
      Template.fromStack(
        new JobschedStack(testApp(), "Custom", { settings: { targetRoleNames: "scheduler/acme-*" } }),
      ),
      "FunctionsDispatcher",
    );
    const withId = { "sts:ExternalId": TENANT };
    expect(evaluate(custom, assume("arn:aws:iam::111122223333:role/scheduler/acme-mail", withId))).toBe(
      "allow",
    );
    expect(evaluate(custom, assume("arn:aws:iam::111122223333:role/jobsched-target-mail", withId))).toBe(
      "implicit-deny",
    );
  });
});

describe("the target-role trust policy of docs/deploy.md", () => {
  const DISPATCHER = "arn:aws:iam::999988887777:role/Jobsched-FunctionsDispatcherServiceRole-ABC";
  const documented = readFileSync(resolve(import.meta.dirname, "../../docs/deploy.md"), "utf8");
  const block = [...documented.matchAll(/```json\n([\s\S]*?)```/g)]
    .map((match) => match[1] ?? "")
    .find((json) => json.includes("sts:TagSession"));
  const trustFor = (tenant: string): Statement[] => {
    if (!block) throw new Error("docs/deploy.md shows no trust policy with sts:TagSession");
    const text = block
      .replaceAll("DISPATCHER_ROLE_ARN", DISPATCHER)
      .replaceAll("YOUR_TENANT_TAG", tenantTagValue(tenant))
      .replaceAll("YOUR_TENANT", tenant);
    return (JSON.parse(text) as { Statement: Statement[] }).Statement;
  };
  const session = (tenant: string) => ({
    "sts:ExternalId": tenant,
    "aws:RequestTag/jobsched-tenant": tenantTagValue(tenant),
    "aws:TagKeys": ["jobsched-tenant"],
  });
  const call = (action: string, context: Record<string, string | string[]>, principal = DISPATCHER) => ({
    action,
    principal,
    context,
  });

  it("lets the dispatcher in on its tenant's behalf, with the tags it sends", () => {
    const trust = trustFor(TENANT);
    expect(evaluate(trust, call("sts:AssumeRole", session(TENANT)))).toBe("allow");
    expect(evaluate(trust, call("sts:TagSession", session(TENANT)))).toBe("allow");
  });

  it("keeps out another tenant of the deployment, a session without the tag, and any other principal", () => {
    const trust = trustFor(TENANT);
    const other = session("arn:aws:iam::111122223333:role/Mallory");
    expect(evaluate(trust, call("sts:AssumeRole", other))).toBe("implicit-deny");
    expect(evaluate(trust, call("sts:TagSession", other))).toBe("implicit-deny");
    // The right external id with another tenant's tag, and the other way round.
    expect(
      evaluate(
        trust,
        call("sts:AssumeRole", { ...session(TENANT), "aws:RequestTag/jobsched-tenant": "Mallory" }),
      ),
    ).toBe("implicit-deny");
    expect(evaluate(trust, call("sts:AssumeRole", { ...session(TENANT), "sts:ExternalId": "Mallory" }))).toBe(
      "implicit-deny",
    );
    expect(evaluate(trust, call("sts:AssumeRole", { "sts:ExternalId": TENANT }))).toBe("implicit-deny");
    expect(
      evaluate(
        trust,
        call("sts:TagSession", { ...session(TENANT), "aws:TagKeys": ["jobsched-tenant", "team"] }),
      ),
    ).toBe("implicit-deny");
    expect(
      evaluate(
        trust,
        call("sts:AssumeRole", session(TENANT), "arn:aws:iam::999988887777:role/SomethingElse"),
      ),
    ).toBe("implicit-deny");
  });

  it("holds for a tenant whose name is no session tag value (hashed)", () => {
    const odd = "arn:aws:iam::111122223333:role/billing,eu";
    expect(tenantTagValue(odd)).toMatch(/^sha256:[A-Za-z0-9+/]{43}=$/);
    const trust = trustFor(odd);
    expect(evaluate(trust, call("sts:AssumeRole", session(odd)))).toBe("allow");
    expect(
      evaluate(trust, call("sts:AssumeRole", session("arn:aws:iam::111122223333:role/billing_eu"))),
    ).toBe("implicit-deny");
  });
});
