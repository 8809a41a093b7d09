import { createHash } from "node:crypto";

/**
 * What SQS takes as a MessageGroupId: 1 to 128 characters, each a letter, a digit or ASCII
 * punctuation (`!"#$%&'()*+,-./:;<=>?@[\]^_\`{|}~`), i.e. printable ASCII without the space.
 */
export const MESSAGE_GROUP_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/**
 * The MessageGroupId a push run's message carries: its tenant. On a standard queue it makes
 * the push queue an SQS fair queue (decision 0039): a tenant with a backlog or slow endpoints
 * is noisy, and the receives that follow hand out the other tenants' runs first.
 *
 * A tenant is an IAM ARN or a mapped name, so it may not fit SQS's rule (a role with a long
 * path, a name with a space or a non-ASCII letter): such a tenant is named by a hash of itself,
 * the same in every process, as distinct from every other tenant as a tenant is.
 */
export function messageGroupIdOf(tenant: string): string {
  if (MESSAGE_GROUP_ID_PATTERN.test(tenant)) return tenant;
  return `sha256:${createHash("sha256").update(tenant, "utf8").digest("hex")}`;
}
