import { createHash } from "node:crypto";

/**
 * The value of the session tag the dispatcher assumes every target role with (decision 0035;
 * key TENANT_SESSION_TAG_KEY): the tenant the delivery is for, which the role's trust policy
 * checks (docs/deploy.md), so a role trusts the dispatcher only on its own tenant's behalf.
 */

/** STS's session tag values: at most 256 of letters, digits, spaces and _ . : / = + - @. */
const TAG_VALUE = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]{0,256}$/u;
const HASHED = "sha256:";

/**
 * The tag value for a tenant: the tenant itself when STS accepts it as one (a role's ARN
 * usually is), otherwise `sha256:` and the base64 SHA-256 of the tenant's UTF-8 bytes (a
 * comma in a role name, a name over 256 characters). One tenant, one value, and no two
 * tenants share one: a tenant that itself starts with `sha256:` is hashed too.
 */
export function tenantTagValue(tenant: string): string {
  if (TAG_VALUE.test(tenant) && !tenant.startsWith(HASHED)) return tenant;
  return `${HASHED}${createHash("sha256").update(tenant, "utf8").digest("base64")}`;
}
