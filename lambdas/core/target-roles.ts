import type { TenantAccounts } from "../definitions/target-role-config";

/**
 * Which roles a tenant's Lambda and SQS targets may be reached with (decision 0035): the
 * dispatcher assumes the role a job names, so a tenant must not be able to name a role that
 * is not its own (the confused-deputy problem). Checked at create and PATCH (a 400 naming
 * `target.roleArn`), and again at every delivery, for jobs created before the rules changed.
 */
export interface TargetRoleRules {
  /** Role path-and-name pattern with IAM's `*` and `?` (settings.targetRoleNames). */
  readonly namePattern: string;
  /** Accounts listed per tenant (TENANT_ACCOUNTS); absent: none listed. */
  readonly tenantAccounts?: TenantAccounts | undefined;
}

/** A principal's ARN names its account: arn:aws:iam::<account>:role/..., arn:aws:sts::<account>:... */
const PRINCIPAL_ACCOUNT = /^arn:aws[a-z-]*:(?:iam|sts)::(\d{12}):/;
const ROLE_ARN = /^arn:aws[a-z-]*:iam::(\d{12}):role\/(.+)$/;

/**
 * The accounts a tenant's target roles may be in: the account of the principal that is the
 * tenant (a tenant is the IAM principal that calls the API), and any listed for it. A tenant
 * that a mapping names (not an ARN) has only the listed ones.
 */
export function accountsOfTenant(tenant: string, tenantAccounts: TenantAccounts | undefined): string[] {
  const own = PRINCIPAL_ACCOUNT.exec(tenant)?.[1];
  return [...new Set([...(own === undefined ? [] : [own]), ...(tenantAccounts?.[tenant] ?? [])])];
}

/**
 * Whether a role's path and name (what follows `role/` in its ARN) match an IAM resource
 * pattern: `*` any run of characters (slashes too), `?` any one, as IAM matches the
 * `arn:aws:iam::*:role/<pattern>` resource of the dispatcher's grant.
 */
export function roleNameMatches(pattern: string, pathAndName: string): boolean {
  const source = [...pattern]
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`).test(pathAndName);
}

/** What is wrong with a target role for this tenant, or undefined when the dispatcher may use it. */
export function targetRoleProblem(
  roleArn: string,
  tenant: string,
  rules: TargetRoleRules,
): string | undefined {
  const role = ROLE_ARN.exec(roleArn);
  if (!role) return "must be an IAM role ARN, like arn:aws:iam::123456789012:role/jobsched-target-reminders";
  const account = role[1] ?? "";
  const pathAndName = role[2] ?? "";
  const accounts = accountsOfTenant(tenant, rules.tenantAccounts);
  if (accounts.length === 0) {
    return (
      "your tenant has no AWS account for target roles: a tenant named by the deployment's tenant " +
      "mapping uses roles only in the accounts the operator lists for it (CDK context jobsched:tenantAccounts)"
    );
  }
  if (!accounts.includes(account)) {
    return `must be a role in your own account (${accounts.join(", ")}), not in ${account}`;
  }
  if (!roleNameMatches(rules.namePattern, pathAndName)) {
    return `the role's name must match ${rules.namePattern}: the only roles this deployment's dispatcher may assume`;
  }
  return undefined;
}
