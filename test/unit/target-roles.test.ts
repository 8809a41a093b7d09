import { describe, expect, it } from "vitest";
import { Targets } from "../../lambdas/adapters/targets/target-invoker";
import { tenantTagValue } from "../../lambdas/adapters/targets/tenant-session-tag";
import { ValidationError } from "../../lambdas/core/errors";
import type { RunEnvelope, Target } from "../../lambdas/core/target";
import { accountsOfTenant, roleNameMatches, targetRoleProblem } from "../../lambdas/core/target-roles";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { updateJob } from "../../lambdas/core/use-cases/update-job";
import { parseTenantAccounts } from "../../lambdas/definitions/target-role-config";
import { memoryDeps } from "../support/memory-ports";

/**
 * Issue 27, finding 6: a tenant may name only a role of its own account that the dispatcher
 * is meant to assume; refused at create and PATCH with a 400 naming `target.roleArn` (nothing
 * stored), and again at delivery for a job made before the rules changed.
 */
const NOW = Date.parse("2027-01-04T09:00:00Z");
const OWN = "111122223333";
const OTHER = "444455556666";
const billing = { tenant: `arn:aws:iam::${OWN}:role/Billing`, principal: `arn:aws:iam::${OWN}:role/Billing` };
const mapped = { tenant: "billing", principal: `arn:aws:iam::${OWN}:role/BillingCron` };
const runAt = new Date(NOW + 3_600_000).toISOString();
const lambda = (roleArn: string): Target => ({
  kind: "lambda",
  functionArn: `arn:aws:lambda:eu-west-1:${OWN}:function:reminders`,
  roleArn,
  invocation: "sync",
});
const role = (account: string, name: string) => `arn:aws:iam::${account}:role/${name}`;

describe("a target role at create and PATCH", () => {
  it("is accepted in the tenant's own account, named for the dispatcher", async () => {
    const deps = memoryDeps(NOW);
    await expect(
      createJob(deps, billing, { target: lambda(role(OWN, "jobsched-target-reminders")), runAt }),
    ).resolves.toMatchObject({ created: true });
  });

  it("is refused in another account, naming the field and the tenant's account; nothing is stored", async () => {
    const deps = memoryDeps(NOW);
    const refused = createJob(deps, billing, {
      target: lambda(role(OTHER, "jobsched-target-reminders")),
      runAt,
    });
    await expect(refused).rejects.toBeInstanceOf(ValidationError);
    await expect(refused).rejects.toMatchObject({
      field: "target.roleArn",
      message: `target.roleArn: must be a role in your own account (${OWN}), not in ${OTHER}`,
    });
    expect(deps.jobs.jobs.size).toBe(0);
    expect(deps.queue.sent).toEqual([]);
  });

  it("is refused when its name does not match the dispatcher's pattern (a role that trusts the account root)", async () => {
    const deps = memoryDeps(NOW);
    for (const name of ["Admin", "jobsched-billing", "team/jobsched-target-x"]) {
      await expect(
        createJob(deps, billing, { target: lambda(role(OWN, name)), runAt }),
        name,
      ).rejects.toMatchObject({
        field: "target.roleArn",
        message: expect.stringContaining("must match jobsched-target-*"),
      });
    }
    const custom = memoryDeps(NOW, { targetRoleNames: "team/*" });
    await expect(
      createJob(custom, billing, {
        target: {
          kind: "sqs",
          queueUrl: "http://sqs.us-east-1.localhost:9324/111122223333/q",
          roleArn: role(OWN, "team/jobsched-target-x"),
        },
        runAt,
      }),
    ).resolves.toMatchObject({ created: true });
  });

  it("of a mapped tenant is accepted only in the accounts listed for it", async () => {
    const unlisted = memoryDeps(NOW);
    await expect(
      createJob(unlisted, mapped, { target: lambda(role(OWN, "jobsched-target-reminders")), runAt }),
    ).rejects.toMatchObject({
      field: "target.roleArn",
      message: expect.stringContaining("jobsched:tenantAccounts"),
    });
    const listed = { ...memoryDeps(NOW), tenantAccounts: { billing: [OTHER] } };
    await expect(
      createJob(listed, mapped, { target: lambda(role(OTHER, "jobsched-target-reminders")), runAt }),
    ).resolves.toMatchObject({ created: true });
    await expect(
      createJob(listed, mapped, { target: lambda(role(OWN, "jobsched-target-reminders")), runAt }),
    ).rejects.toMatchObject({ field: "target.roleArn" });
  });

  it("is refused by a PATCH that moves it to another account, and the job is left as it was", async () => {
    const deps = memoryDeps(NOW);
    const { jobId } = await createJob(deps, billing, {
      target: lambda(role(OWN, "jobsched-target-reminders")),
      runAt,
    });
    const before = await deps.jobs.getJob(jobId);
    await expect(
      updateJob(
        deps,
        billing,
        jobId,
        { target: lambda(role(OTHER, "jobsched-target-reminders")) },
        undefined,
      ),
    ).rejects.toMatchObject({ field: "target.roleArn" });
    expect(await deps.jobs.getJob(jobId)).toEqual(before);
  });
});

describe("a target role at delivery", () => {
  const envelope: RunEnvelope = {
    runKey: "j@2027-01-04T09:00:00Z",
    runId: "r",
    jobId: "j",
    fence: 1,
    scheduledFor: "2027-01-04T09:00:00Z",
    attempt: 0,
    payload: null,
  };
  const targetsWith = (tenantAccounts: Record<string, string[]>) => {
    const reached: string[] = [];
    const reach = {
      lambda: (target: Extract<Target, { kind: "lambda" }>) => {
        reached.push(target.roleArn);
        return { send: async () => ({ StatusCode: 200 }) } as never;
      },
      sqs: () => {
        throw new Error("no SQS in this test");
      },
    };
    const targets = new Targets(
      memoryDeps(NOW).webhookSecrets,
      reach,
      { allowPrivate: false, ports: [443] },
      {
        namePattern: "jobsched-target-*",
        tenantAccounts,
      },
    );
    return { targets, reached };
  };

  it("is refused for good, never assumed, once the tenant's accounts no longer hold it", async () => {
    const target = lambda(role(OTHER, "jobsched-target-reminders"));
    const before = targetsWith({ billing: [OTHER] });
    expect(await before.targets.deliver(target, envelope, { tenant: "billing", timeoutMs: 1_000 })).toEqual({
      ok: true,
    });
    expect(before.reached).toHaveLength(1);
    // The operator took the account off the tenant's list: the job made before is refused.
    const after = targetsWith({});
    const result = await after.targets.deliver(target, envelope, { tenant: "billing", timeoutMs: 1_000 });
    expect(result).toMatchObject({
      ok: false,
      retryable: false,
      error: expect.stringMatching(/^target\.roleArn: /),
    });
    expect(after.reached).toEqual([]);
  });
});

describe("the rules", () => {
  it("give a principal tenant its own account, and a mapped one only its listed accounts", () => {
    expect(accountsOfTenant(`arn:aws:iam::${OWN}:user/ana`, undefined)).toEqual([OWN]);
    expect(
      accountsOfTenant(`arn:aws:iam::${OWN}:role/Billing`, { [`arn:aws:iam::${OWN}:role/Billing`]: [OTHER] }),
    ).toEqual([OWN, OTHER]);
    expect(accountsOfTenant("billing", undefined)).toEqual([]);
    expect(accountsOfTenant("billing", { billing: [OTHER, OWN] })).toEqual([OTHER, OWN]);
  });

  it("match role names as IAM matches the grant's resource: * across slashes, ? one character, the rest literal", () => {
    expect(roleNameMatches("jobsched-target-*", "jobsched-target-a")).toBe(true);
    expect(roleNameMatches("jobsched-target-*", "jobsched-target-a/b")).toBe(true);
    expect(roleNameMatches("jobsched-target-*", "x/jobsched-target-a")).toBe(false);
    expect(roleNameMatches("jobsched.target-?", "jobschedXtarget-a")).toBe(false);
    expect(roleNameMatches("jobsched.target-?", "jobsched.target-a")).toBe(true);
    expect(roleNameMatches("jobsched.target-?", "jobsched.target-ab")).toBe(false);
    expect(targetRoleProblem("not-an-arn", billing.tenant, { namePattern: "*" })).toMatch(/IAM role ARN/);
  });

  it("tag a session with the tenant when STS takes it as a tag value, else with its hash", () => {
    expect(tenantTagValue(billing.tenant)).toBe(billing.tenant);
    expect(tenantTagValue("billing team")).toBe("billing team");
    const comma = tenantTagValue(`arn:aws:iam::${OWN}:role/a,b`);
    expect(comma).toMatch(/^sha256:/);
    expect(comma).not.toBe(tenantTagValue(`arn:aws:iam::${OWN}:role/a_b`));
    expect(tenantTagValue("x".repeat(257))).toMatch(/^sha256:/);
    expect(tenantTagValue("x".repeat(256))).toBe("x".repeat(256));
    // A tenant named like a hash cannot pass for the tenant it is the hash of.
    expect(tenantTagValue(comma)).not.toBe(comma);
  });

  it("read tenant accounts from JSON, refusing what is not an account list", () => {
    expect(parseTenantAccounts('{"billing": ["111122223333"]}', "TENANT_ACCOUNTS")).toEqual({
      billing: [OWN],
    });
    expect(parseTenantAccounts("", "TENANT_ACCOUNTS")).toEqual({});
    expect(() => parseTenantAccounts({ billing: ["1234"] }, "context jobsched:tenantAccounts")).toThrow(
      /context jobsched:tenantAccounts "billing.0": must be a 12-digit AWS account id/,
    );
    expect(() => parseTenantAccounts({ billing: [] }, "X")).toThrow(/X "billing": lists no account/);
    expect(() => parseTenantAccounts("{", "X")).toThrow(/X: not valid JSON/);
  });
});
