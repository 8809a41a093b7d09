import { documentProblem, isWellFormed } from "@jobsched/contract";
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from "aws-lambda";
import type { Caller, WorkerCaller } from "../../core/caller";
import { ForbiddenError, ValidationError } from "../../core/errors";
import type { WorkerBindings } from "../../definitions/worker-bindings";

export type HttpEvent = APIGatewayProxyEventV2WithIAMAuthorizer;

/** Largest request body accepted: the payload limit plus room for the other fields. */
const MAX_BODY_BYTES = 300 * 1024;
/**
 * Largest bulk-create body (POST /api/v1/jobs/batch). Lambda takes at most 6 MB in a request
 * event, and API Gateway may send a body base64-encoded (4/3 larger): 4 MiB stays under both.
 */
export const MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024;

/** Longest path parameter or query value accepted (ids, cursors, names are all far shorter). */
const MAX_PARAMETER_LENGTH = 4096;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The request's JSON body; an absent body is an empty object. Every value in it already meets
 * DynamoDB's document rules (packages/contract/src/document-limits.ts: valid UTF-8, numbers DynamoDB
 * and the SDK can carry, nesting, keys), the body itself counting as level 0, so a payload is a
 * top-level attribute: one check at the edge, before any use case reads it.
 */
export function jsonBody(
  event: HttpEvent,
  maxBytes = MAX_BODY_BYTES,
  /** false: the use case checks its parts one by one (a bulk create's items). */
  checkDocument = true,
): unknown {
  if (event.body === undefined || event.body === "") return {};
  let text: string;
  if (event.isBase64Encoded) {
    const bytes = Buffer.from(event.body, "base64");
    if (bytes.byteLength > maxBytes) bodyTooLarge(maxBytes);
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      throw new ValidationError("body: not valid UTF-8", "body");
    }
  } else {
    text = event.body;
  }
  if (Buffer.byteLength(text, "utf8") > maxBytes) bodyTooLarge(maxBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ValidationError("body: not valid JSON", "body");
  }
  const problem = checkDocument ? documentProblem(body, 0) : undefined;
  if (problem) {
    const field = problem.path.length === 0 ? "body" : problem.path.join(".");
    throw new ValidationError(`${field}: ${problem.message}`, field);
  }
  return body;
}

function bodyTooLarge(maxBytes: number): never {
  throw new ValidationError(`body: larger than ${maxBytes} bytes`, "body");
}

/** A path parameter or query value: valid Unicode and of a sane length, or a 400 naming it. */
function checkedParameter(name: string, value: string): string {
  if (!isWellFormed(value)) {
    throw new ValidationError(`${name}: not valid Unicode (a lone surrogate has no UTF-8 form)`, name);
  }
  if (value.length > MAX_PARAMETER_LENGTH) {
    throw new ValidationError(`${name}: longer than ${MAX_PARAMETER_LENGTH} characters`, name);
  }
  return value;
}

export function pathParameter(event: HttpEvent, name: string): string {
  const value = event.pathParameters?.[name];
  if (value === undefined || value === "") throw new ValidationError(`${name}: missing from the path`, name);
  return checkedParameter(name, value);
}

/** The query string's parameters, each checked as path parameters are; the schemas do the rest. */
/** A request header; API Gateway (HTTP API, payload 2.0) hands them over with lower-case names. */
export function header(event: HttpEvent, name: string): string | undefined {
  return event.headers?.[name.toLowerCase()];
}

export function queryParameters(event: HttpEvent): Record<string, string | undefined> {
  const query = event.queryStringParameters ?? {};
  for (const [name, value] of Object.entries(query)) {
    checkedParameter(isWellFormed(name) ? name : "query", name);
    if (value !== undefined) checkedParameter(name, value);
  }
  return query;
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
