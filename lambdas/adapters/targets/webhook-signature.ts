import { createHmac } from "node:crypto";

/**
 * Standard Webhooks signatures (standardwebhooks.com): HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>` with the secret's key (the base64 after `whsec_`),
 * base64-encoded and prefixed `v1,`; one per secret, space-separated, so a receiver holding
 * either the new or the previous secret verifies during a rotation.
 */
export function webhookSignature(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const signed = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
      return `v1,${createHmac("sha256", key).update(signed).digest("base64")}`;
    })
    .join(" ");
}
