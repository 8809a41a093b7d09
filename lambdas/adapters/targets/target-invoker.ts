import type { LambdaClient } from "@aws-sdk/client-lambda";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { STSClient } from "@aws-sdk/client-sts";
import type { DestinationRules } from "../../core/destination-rules";
import type { WebhookSecretStore } from "../../core/ports";
import type { DeliveryResult, RunEnvelope, Target, TargetInvoker } from "../../core/target";
import { type TargetRoleRules, targetRoleProblem } from "../../core/target-roles";
import { SIGNING_SECRETS_CACHE_MS, signingSecretsOf } from "../../core/use-cases/webhook-secrets";
import { invokeFunction, sendToQueue, TargetClients, TenantRoles } from "./aws-targets";
import { deliverWebhook } from "./https-target";

/** Where each kind of target is reached: in AWS, with the tenant's role; locally, on the emulators. */
export interface TargetReach {
  readonly lambda: (target: Extract<Target, { kind: "lambda" }>, tenant: string) => LambdaLike;
  readonly sqs: (target: Extract<Target, { kind: "sqs" }>, tenant: string) => SQSClient;
}

/** A Lambda client, or the local runtime's stand-in for one. */
export type LambdaLike = Pick<LambdaClient, "send">;

/** The dispatcher's deliveries, per kind (decision 0029). */
export class Targets implements TargetInvoker {
  private readonly secrets = new Map<string, { at: number; value: Promise<readonly string[]> }>();

  constructor(
    private readonly store: WebhookSecretStore,
    private readonly reach: TargetReach,
    private readonly rules: DestinationRules,
    /** Whose roles the dispatcher may assume: checked again here, for jobs made under older rules. */
    private readonly roles: TargetRoleRules,
    private readonly now: () => number = Date.now,
  ) {}

  async deliver(
    target: Target,
    envelope: RunEnvelope,
    context: { readonly tenant: string; readonly timeoutMs: number },
  ): Promise<DeliveryResult> {
    if (target.kind !== "https") {
      const problem = targetRoleProblem(target.roleArn, context.tenant, this.roles);
      // The job's role was allowed when it was made and is not now (the settings changed):
      // never assumed, and the run dead-lettered with the reason, as a 4xx of the target is.
      if (problem) return { ok: false, retryable: false, error: `target.roleArn: ${problem}` };
    }
    switch (target.kind) {
      case "https":
        return deliverWebhook(target.url, envelope, context, {
          secretsOf: (tenant) => this.secretsOf(tenant),
          rules: this.rules,
          now: this.now,
        });
      case "lambda":
        return invokeFunction(
          this.reach.lambda(target, context.tenant) as LambdaClient,
          target.functionArn,
          envelope,
          context.timeoutMs,
          target.invocation,
        );
      case "sqs":
        return sendToQueue(
          this.reach.sqs(target, context.tenant),
          target.queueUrl,
          envelope,
          context.timeoutMs,
        );
    }
  }

  /**
   * A tenant's signing secrets, read at most every SIGNING_SECRETS_CACHE_MS: they include the
   * secret the next rotation makes current (decision 0036), and rotations are that far apart,
   * so a copy read before a rotation already signs with the secret it makes current.
   */
  private secretsOf(tenant: string): Promise<readonly string[]> {
    const now = this.now();
    const cached = this.secrets.get(tenant);
    if (cached && now - cached.at < SIGNING_SECRETS_CACHE_MS) return cached.value;
    const read = this.store.get(tenant);
    const value = read.then((secret) => (secret ? signingSecretsOf(secret, this.now()) : []));
    // Kept only when it names the next secret: not a failed read, not "no secret yet", and not
    // a secret stored before `next` existed (its rotation draws a secret no copy knows), which
    // is read for every delivery until the tenant's next rotation.
    const forget = () => this.secrets.get(tenant)?.value === value && this.secrets.delete(tenant);
    read.then((secret) => secret?.next === undefined && forget(), forget);
    this.secrets.set(tenant, { at: now, value });
    return value;
  }
}

/** AWS: each Lambda and SQS call made with the tenant's own role, assumed with its external id. */
export function cloudReach(region: string): TargetReach {
  const clients = new TargetClients(new TenantRoles(new STSClient({ region })));
  return {
    lambda: (target, tenant) => clients.lambdaFor(target.functionArn, target.roleArn, tenant),
    sqs: (target, tenant) => clients.sqsFor(target.queueUrl, target.roleArn, tenant),
  };
}
