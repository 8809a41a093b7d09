import { randomBytes } from "node:crypto";
import type { WebhookSecretStore } from "../../lambdas/core/ports";

/**
 * Stores `current` as a tenant's webhook secret the way a rotation does (webhook-secrets.ts):
 * with the `next` secret beside it. A secret stored without `next` is the shape written before
 * rotations drew one, which the dispatcher reads again for every delivery (decision 0036), so
 * a bench or a test that stores that shape measures a read per delivery no tenant has today.
 */
export async function storeWebhookSecret(
  store: WebhookSecretStore,
  tenant: string,
  current: string,
): Promise<void> {
  const next = `whsec_${randomBytes(32).toString("base64")}`;
  if (!(await store.put(tenant, { current, next, createdAt: Date.now() }, undefined)))
    throw new Error(`${tenant} already has a webhook secret`);
}
