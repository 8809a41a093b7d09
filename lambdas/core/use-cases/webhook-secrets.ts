import type { WebhookSecretResponse } from "@jobsched/contract";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { ConflictError, NotFoundError } from "../errors";
import type { RandomBytes } from "../ids";
import { formatInstant } from "../instant";
import type { WebhookSecret } from "../ports";

/**
 * After a rotation the previous secret signs deliveries too (Standard Webhooks sends one
 * signature per secret), for a day: receivers switch to the new secret without a gap.
 */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600_000;

/** 32 random bytes: the key length Standard Webhooks recommends for HMAC-SHA256. */
const SECRET_BYTES = 32;

/**
 * POST /api/v1/webhook-secret: creates the tenant's webhook secret, or rotates it (the previous
 * one keeps signing for a day). The answer is the only place the secret is ever shown.
 */
export async function rotateWebhookSecret(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
): Promise<{ readonly created: boolean; readonly body: WebhookSecretResponse }> {
  const now = deps.clock.now();
  const existing = await deps.webhookSecrets.get(caller.tenant);
  const secret: WebhookSecret = {
    current: `whsec_${Buffer.from(deps.randomBytes(SECRET_BYTES)).toString("base64")}`,
    createdAt: now,
    ...(existing ? { previous: existing.current, previousValidUntil: now + PREVIOUS_SECRET_GRACE_MS } : {}),
  };
  if (!(await deps.webhookSecrets.put(caller.tenant, secret, existing?.current))) {
    throw new ConflictError("webhook secret: rotated by another request at the same time; try again");
  }
  return { created: existing === undefined, body: { secret: secret.current, ...metadataOf(secret, now) } };
}

/** GET /api/v1/webhook-secret: when it was made, and how long the previous one still signs. */
export async function showWebhookSecret(deps: SchedulerDeps, caller: Caller): Promise<WebhookSecretResponse> {
  const secret = await deps.webhookSecrets.get(caller.tenant);
  if (!secret) {
    throw new NotFoundError("no webhook secret yet: create one with POST /api/v1/webhook-secret");
  }
  return metadataOf(secret, deps.clock.now());
}

function metadataOf(secret: WebhookSecret, now: number): WebhookSecretResponse {
  const previousLive = secret.previousValidUntil !== undefined && secret.previousValidUntil > now;
  return {
    createdAt: formatInstant(secret.createdAt),
    ...(previousLive ? { previousValidUntil: formatInstant(secret.previousValidUntil as number) } : {}),
  };
}

/** The secrets that sign a delivery now: the current one, and the previous during its grace. */
export function signingSecretsOf(secret: WebhookSecret, now: number): string[] {
  const previousLive =
    secret.previous !== undefined &&
    secret.previousValidUntil !== undefined &&
    secret.previousValidUntil > now;
  return previousLive ? [secret.current, secret.previous as string] : [secret.current];
}
