import type { APIGatewayProxyEventV2WithIAMAuthorizer } from "aws-lambda";
import type { Caller, WorkerCaller } from "../../core/caller";
import { ForbiddenError, ValidationError } from "../../core/errors";
import type { WorkerBindings } from "../../definitions/worker-bindings";

export type HttpEvent = APIGatewayProxyEventV2WithIAMAuthorizer;

/** Largest request body accepted: the payload limit plus room for the other fields. */
const MAX_BODY_BYTES = 300 * 1024;

/** The request's JSON body; an absent body is an empty object. */
export function jsonBody(event: HttpEvent): unknown {
  if (event.body === undefined || event.body === "") return {};
  const text = event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
  if (Buffer.byteLength(text, "utf8") > MAX_BODY_BYTES) {
    throw new ValidationError(`body: larger than ${MAX_BODY_BYTES} bytes`, "body");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError("body: not valid JSON", "body");
  }
}

export function pathParameter(event: HttpEvent, name: string): string {
  const value = event.pathParameters?.[name];
  if (value === undefined || value === "") throw new ValidationError(`${name}: missing from the path`, name);
  return value;
}

/**
 * The tenant is the IAM identity that signed the request, with any STS session name dropped:
 * arn:aws:sts::111122223333:assumed-role/Billing/session-42 is tenant
 * arn:aws:iam::111122223333:role/Billing, so every session of a role shares its jobs.
 */
export function tenantOfPrincipal(principalArn: string): string {
  const assumed = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(principalArn);
  return assumed ? `arn:${assumed[1]}:iam::${assumed[2]}:role/${assumed[3]}` : principalArn;
}

/**
 * The caller of a request. `mapping` (TENANT_MAPPING) may name the tenant of a principal
 * explicitly, for example to let several roles share one tenant's jobs.
 */
export function callerOf(event: HttpEvent, mapping: Readonly<Record<string, string>> = {}): Caller {
  const principal = event.requestContext.authorizer?.iam?.userArn;
  if (!principal) throw new ForbiddenError("the request is not signed with IAM credentials");
  const tenant = tenantOfPrincipal(principal);
  return { tenant: mapping[tenant] ?? mapping[principal] ?? tenant, principal };
}

/**
 * The worker calling /internal/*: its principal (a session counts as its role) must have a
 * worker binding, which names the tenants it serves. Anyone else is refused here, in the
 * application, whatever their IAM policy allowed.
 */
export function workerOf(event: HttpEvent, bindings: WorkerBindings): WorkerCaller {
  const principal = event.requestContext.authorizer?.iam?.userArn;
  if (!principal) throw new ForbiddenError("the request is not signed with IAM credentials");
  const identity = tenantOfPrincipal(principal);
  const tenants = bindings.get(identity) ?? bindings.get(principal);
  if (!tenants) {
    throw new ForbiddenError(
      `${identity} is not a jobsched worker: no worker binding names it (CDK context jobsched:workers)`,
    );
  }
  return { principal, tenants };
}
