import type { WebhookSecretResponse } from "@jobsched/contract";
import { FUNCTION_TIMEOUT_SECONDS } from "../../definitions/functions";
import type { Caller } from "../caller";
import type { SchedulerDeps } from "../deps";
import { ConflictError, NotFoundError, QuotaExceededError } from "../errors";
import type { RandomBytes } from "../ids";
import { formatInstant } from "../instant";
import type { WebhookSecret } from "../ports";

/**
 * After a rotation the previous secret signs deliveries too (Standard Webhooks sends one
 * signature per secret), for a day: receivers switch to the new secret without a gap.
 */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600_000;

/**
 * How long a dispatcher instance keeps a tenant's secrets between reads (decision 0036). Every
 * delivery is signed with the secret the next rotation will make current as well (`next`, never
 * shown until then), so a dispatcher that read the secrets before a rotation already signs with
 * the new one: a rotation signs with the new secret from its answer on, on every instance.
 */
export const SIGNING_SECRETS_CACHE_MS = 30_000;

/**
 * The least time between two rotations: a rotation makes current the `next` secret of the one
 * before, which a dispatcher knows only once it has read the secrets since that one was written.
 * The previous rotation's write ended within the API function's timeout; every instance's copy
 * is at most SIGNING_SECRETS_CACHE_MS old; a second covers the clocks of two machines.
 */
export const MIN_ROTATION_INTERVAL_MS =
  SIGNING_SECRETS_CACHE_MS + FUNCTION_TIMEOUT_SECONDS.api * 1000 + 1_000;

/** 32 random bytes: the key length Standard Webhooks recommends for HMAC-SHA256. */
const SECRET_BYTES = 32;

/**
 * POST /api/v1/webhook-secret: creates the tenant's webhook secret, or rotates it: the secret
 * every delivery was already signed with besides the current one (`next`) becomes current, so
 * it signs on every dispatcher from this answer on, and a new `next` is drawn; the previous one
 * keeps signing for a day. A second rotation within MIN_ROTATION_INTERVAL_MS is refused (429)
 * and changes nothing. The answer is the only place the secret is ever shown.
 */
export async function rotateWebhookSecret(
  deps: SchedulerDeps & { readonly randomBytes: RandomBytes },
  caller: Caller,
): Promise<{ readonly created: boolean; readonly body: WebhookSecretResponse }> {
  const now = deps.clock.now();
  const existing = await deps.webhookSecrets.get(caller.tenant);
  const fresh = () => `whsec_${Buffer.from(deps.randomBytes(SECRET_BYTES)).toString("base64")}`;
  if (existing?.next !== undefined && now - existing.createdAt < MIN_ROTATION_INTERVAL_MS) {
    const waitMs = existing.createdAt + MIN_ROTATION_INTERVAL_MS - now;
    throw new QuotaExceededError(
      `webhook secret: rotated at ${formatInstant(existing.createdAt)}; rotate again after ` +
        `${formatInstant(existing.createdAt + MIN_ROTATION_INTERVAL_MS)} (every dispatcher must know a secret before it becomes current)`,
      "webhook-secret",
      Math.ceil(waitMs / 1000),
    );
  }
  const secret: WebhookSecret = {
    // A secret stored before `next` existed is not kept by the dispatchers (they read it for
    // every delivery), so a fresh one signs everywhere at once too.
    current: existing?.next ?? fresh(),
    next: fresh(),
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

/**
 * The secrets that sign a delivery now: the current one, the next one (shown at the next
 * rotation; until then no receiver holds it, and its signature is one a verifier skips), and
 * the previous during its grace.
 */
export function signingSecretsOf(secret: WebhookSecret, now: number): string[] {
  const previousLive =
    secret.previous !== undefined &&
    secret.previousValidUntil !== undefined &&
    secret.previousValidUntil > now;
  return [
    secret.current,
    ...(secret.next === undefined ? [] : [secret.next]),
    ...(previousLive ? [secret.previous as string] : []),
  ];
}
