import { z } from "zod";

/**
 * The session tag the dispatcher assumes every target role with, its value the tenant the
 * delivery is for (adapters/targets/tenant-session-tag.ts): the role's trust policy checks it
 * with `aws:RequestTag/jobsched-tenant`, and the dispatcher's policy allows no other tag.
 */
export const TENANT_SESSION_TAG_KEY = "jobsched-tenant";

/**
 * Tenant accounts (TENANT_ACCOUNTS; CDK context `jobsched:tenantAccounts`): tenant -> the AWS
 * accounts whose roles its Lambda and SQS targets may use (decision 0035). A tenant named by
 * its principal's ARN owns that ARN's account without being listed here; a tenant that
 * `jobsched:tenantMapping` names has no account of its own, so it may use roles only in the
 * accounts listed for it.
 *
 * Tenants are named as the API names them: the principal's ARN, or the mapped name.
 */
export type TenantAccounts = Readonly<Record<string, readonly string[]>>;

const accountId = z.string().regex(/^\d{12}$/, "must be a 12-digit AWS account id");
const tenantAccountsSchema = z.record(
  z.string().trim().min(1, "a tenant name must not be empty").max(2048),
  z
    .array(accountId)
    .min(1, "lists no account")
    .refine((accounts) => new Set(accounts).size === accounts.length, "lists an account twice"),
);

/**
 * Parses tenant accounts given as a JSON object `{"<tenant>": ["<account id>", ...]}` (or that
 * object already parsed). Throws an Error naming `source` and the offending entry.
 */
export function parseTenantAccounts(input: unknown, source: string): TenantAccounts {
  let value = input;
  if (typeof input === "string") {
    try {
      value = input.trim() === "" ? {} : JSON.parse(input);
    } catch {
      throw new Error(`${source}: not valid JSON (expected {"<tenant>": ["<12-digit account id>", ...]})`);
    }
  }
  const parsed = tenantAccountsSchema.safeParse(value ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` "${issue.path.map(String).join(".")}"` : "";
    const message = issue?.code === "invalid_key" ? issue.issues[0]?.message : issue?.message;
    throw new Error(`${source}${where}: ${message ?? "invalid tenant accounts"}`);
  }
  return parsed.data;
}
