import { createHash } from "node:crypto";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { AssumeRoleCommand, type STSClient } from "@aws-sdk/client-sts";
import type { LambdaInvocation } from "@jobsched/contract";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import { AWS_TARGET_TIMEOUT_SECONDS, type DeliveryResult, type RunEnvelope } from "../../core/target";
import { TENANT_SESSION_TAG_KEY } from "../../definitions/target-role-config";
import { tenantTagValue } from "./tenant-session-tag";

const ERROR_EXCERPT_CHARS = 512;

/**
 * Credentials for a tenant's role: assumed with the tenant as the external id and as the
 * `jobsched-tenant` session tag (the role's trust policy requires both, so no other tenant can
 * make the dispatcher use that role: the confused-deputy problem; decision 0035), kept per
 * role and tenant until a minute before they expire.
 */
export class TenantRoles {
  private readonly cache = new Map<string, Promise<AwsCredentialIdentity & { expiration: Date }>>();

  constructor(private readonly sts: STSClient) {}

  credentialsFor(roleArn: string, tenant: string): AwsCredentialIdentityProvider {
    const key = `${roleArn}\n${tenant}`;
    return async () => {
      const cached = this.cache.get(key);
      if (cached) {
        const held = await cached.catch(() => undefined);
        if (held && held.expiration.getTime() - Date.now() > 60_000) return held;
      }
      const fresh = this.assume(roleArn, tenant);
      this.cache.set(key, fresh);
      fresh.catch(() => this.cache.delete(key));
      return fresh;
    };
  }

  private async assume(roleArn: string, tenant: string) {
    const { Credentials } = await this.sts.send(
      new AssumeRoleCommand({
        RoleArn: roleArn,
        ExternalId: tenant,
        RoleSessionName: `jobsched-${tenant.replace(/[^\w+=,.@-]/g, "-")}`.slice(0, 64),
        DurationSeconds: 900,
        Tags: [{ Key: TENANT_SESSION_TAG_KEY, Value: tenantTagValue(tenant) }],
      }),
    );
    if (!Credentials?.AccessKeyId || !Credentials.SecretAccessKey || !Credentials.Expiration) {
      throw new Error(`AssumeRole of ${roleArn} returned no credentials`);
    }
    return {
      accessKeyId: Credentials.AccessKeyId,
      secretAccessKey: Credentials.SecretAccessKey,
      sessionToken: Credentials.SessionToken,
      expiration: Credentials.Expiration,
    };
  }
}

/** The region in a Lambda ARN, or in an SQS queue URL's host. */
export function regionOfArn(arn: string): string {
  return arn.split(":")[3] ?? "us-east-1";
}
export function regionOfQueueUrl(url: string): string {
  const host = new URL(url).hostname;
  return /^sqs\.([a-z0-9-]+)\./.exec(host)?.[1] ?? /^([a-z0-9-]+)\.queue\./.exec(host)?.[1] ?? "us-east-1";
}

/** How a failed AWS call counts: a 4xx other than throttling is the tenant's to fix (for good). */
export function awsFailure(error: unknown, what: string): DeliveryResult {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const name = (error as Error).name;
  const throttled = status === 429 || /Throttl|TooManyRequests/.test(name);
  const retryable = status === undefined || status >= 500 || throttled;
  return { ok: false, retryable, error: `${what}: ${name}: ${(error as Error).message}` };
}

/**
 * Invokes a function with the envelope (decision 0033). `sync` waits for its answer: a function
 * error is a failed attempt, and so is no answer within `timeoutMs` (said as such: the function
 * may still be running). `async` is Lambda's asynchronous invocation, as EventBridge Scheduler
 * makes it: Lambda queues the event and answers 202, which is a delivery; the function's own
 * errors are then Lambda's to retry.
 */
export async function invokeFunction(
  client: LambdaClient,
  functionArn: string,
  envelope: RunEnvelope,
  timeoutMs: number,
  invocation: LambdaInvocation = "sync",
): Promise<DeliveryResult> {
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const answer = await client.send(
      new InvokeCommand({
        FunctionName: functionArn,
        InvocationType: invocation === "async" ? "Event" : "RequestResponse",
        Payload: Buffer.from(JSON.stringify(envelope)),
      }),
      { abortSignal: deadline },
    );
    if (invocation === "async") {
      if (answer.StatusCode === 202) return { ok: true };
      return {
        ok: false,
        retryable: true,
        error: `asynchronous invoke of ${functionArn} answered ${answer.StatusCode ?? "no status"}, not 202 (accepted)`,
      };
    }
    if (answer.FunctionError) {
      const said = Buffer.from(answer.Payload ?? new Uint8Array()).toString("utf8");
      return {
        ok: false,
        retryable: true,
        error: `function error (${answer.FunctionError}): ${said.slice(0, ERROR_EXCERPT_CHARS)}`,
      };
    }
    return { ok: true };
  } catch (error) {
    if (invocation === "sync" && deadline.aborted) return syncTimeout(functionArn, timeoutMs);
    return awsFailure(error, `invoke ${functionArn}`);
  }
}

/**
 * A synchronous invoke that got no answer in time. Lambda does not stop the function when the
 * caller stops waiting, so the attempt may still succeed; it is retried (the run key stays the
 * same for the function's idempotency), and a function that always runs this long needs the
 * asynchronous invocation.
 */
function syncTimeout(functionArn: string, timeoutMs: number): DeliveryResult {
  const seconds = Math.round(timeoutMs / 100) / 10;
  return {
    ok: false,
    retryable: true,
    error:
      `invoke ${functionArn}: no answer within ${seconds} s (a synchronous invoke waits at most ` +
      `${AWS_TARGET_TIMEOUT_SECONDS} s; the function may still be running). For a function that ` +
      `runs longer, set the target's "invocation": "async"`,
  };
}

/**
 * Sends the envelope to a queue; on a FIFO queue the run key (hashed to SQS's 128 characters)
 * is the deduplication id, so an attempt repeated within SQS's 5 minutes sends nothing twice,
 * and the job id is the group.
 */
export async function sendToQueue(
  client: SQSClient,
  queueUrl: string,
  envelope: RunEnvelope,
  timeoutMs: number,
): Promise<DeliveryResult> {
  const fifo = queueUrl.endsWith(".fifo");
  try {
    await client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(envelope),
        ...(fifo
          ? {
              MessageDeduplicationId: createHash("sha256").update(envelope.runKey).digest("hex"),
              MessageGroupId: envelope.jobId,
            }
          : {}),
      }),
      { abortSignal: AbortSignal.timeout(timeoutMs) },
    );
    return { ok: true };
  } catch (error) {
    return awsFailure(error, `send to ${queueUrl}`);
  }
}

/** Clients per region and role (with the tenant): made once per dispatcher instance. */
export class TargetClients {
  private readonly clients = new Map<string, LambdaClient | SQSClient>();

  constructor(private readonly roles: TenantRoles) {}

  lambdaFor(functionArn: string, roleArn: string, tenant: string): LambdaClient {
    return this.clientFor(LambdaClient, regionOfArn(functionArn), roleArn, tenant);
  }

  sqsFor(queueUrl: string, roleArn: string, tenant: string): SQSClient {
    return this.clientFor(SQSClient, regionOfQueueUrl(queueUrl), roleArn, tenant);
  }

  private clientFor<C extends LambdaClient | SQSClient>(
    Client: new (config: { region: string; credentials: AwsCredentialIdentityProvider }) => C,
    region: string,
    roleArn: string,
    tenant: string,
  ): C {
    const key = `${Client.name}\n${region}\n${roleArn}\n${tenant}`;
    let client = this.clients.get(key) as C | undefined;
    if (!client) {
      client = new Client({ region, credentials: this.roles.credentialsFor(roleArn, tenant) });
      this.clients.set(key, client);
    }
    return client;
  }
}
