import { z } from "zod";

/**
 * Worker bindings: which tenants each worker principal serves. A worker principal (an IAM role
 * or user; an assumed-role session counts as its role) is bound to one tenant, or is a pool
 * principal that lists the tenants it serves. It leases only those tenants' runs, and its
 * heartbeats and completions of any other run answer 404. A principal with no binding is 403
 * on every /internal/* route.
 *
 * The operator owns the bindings: CDK context `jobsched:workers` in AWS (passed to the lease
 * function as WORKER_BINDINGS), the worker entries of local/credentials.json locally. Both are
 * read through `parseWorkerBindings`, so the two cannot disagree on what is valid.
 *
 * Tenants are named as the API names them: the tenant principal's ARN, or the name that
 * TENANT_MAPPING gives it.
 */

/**
 * A pool serves at most this many tenants: a completion checks the run's tenant with one
 * DynamoDB `IN (...)` condition, which takes at most 100 operands.
 */
export const MAX_TENANTS_PER_WORKER = 100;

const tenantName = z.string().trim().min(1, "a tenant name must not be empty").max(2048);

const tenantList = z
  .array(tenantName)
  .min(1, "names no tenant: a worker serves at least one tenant")
  .max(MAX_TENANTS_PER_WORKER, `lists more than ${MAX_TENANTS_PER_WORKER} tenants`)
  .refine((tenants) => new Set(tenants).size === tenants.length, "lists a tenant twice");

const workerPrincipal = z
  .string()
  .regex(
    /^arn:aws[a-z-]*:(iam|sts)::\d{12}:\S+$/,
    "must be an IAM principal ARN, e.g. arn:aws:iam::123456789012:role/billing-worker",
  );

const bindingsSchema = z.record(workerPrincipal, tenantList);

/** Worker principal (role or user ARN) -> the tenants it serves. */
export type WorkerBindings = ReadonlyMap<string, readonly string[]>;

/**
 * Parses bindings given as a JSON object `{"<worker principal ARN>": ["<tenant>", ...]}` (or
 * as that object already parsed). Throws an Error whose message names the offending principal
 * and what is wrong; `source` says where the bindings came from (a context key, a file).
 */
export function parseWorkerBindings(input: unknown, source: string): WorkerBindings {
  let value = input;
  if (typeof input === "string") {
    try {
      value = input.trim() === "" ? {} : JSON.parse(input);
    } catch {
      throw new Error(`${source}: not valid JSON (expected {"<worker principal ARN>": ["<tenant>", ...]})`);
    }
  }
  const parsed = bindingsSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` "${issue.path.map(String).join(".")}"` : "";
    // A key that is not a principal ARN reports its reason one level down.
    const message = issue?.code === "invalid_key" ? issue.issues[0]?.message : issue?.message;
    throw new Error(`${source}${where}: ${message ?? "invalid worker bindings"}`);
  }
  return new Map(Object.entries(parsed.data));
}

/** The JSON form of bindings, as WORKER_BINDINGS carries them. */
export function serializeWorkerBindings(bindings: WorkerBindings): string {
  return JSON.stringify(Object.fromEntries(bindings));
}

const tenantMappingSchema = z.record(workerPrincipal, tenantName);

/**
 * The tenant mapping (TENANT_MAPPING; CDK context `jobsched:tenantMapping`): principal or role
 * ARN -> the tenant it acts for, for principals that should share a tenant. A JSON object, or
 * that object already parsed; errors name the source and the offending entry.
 */
export function parseTenantMapping(input: unknown, source: string): Readonly<Record<string, string>> {
  let value = input;
  if (typeof input === "string") {
    try {
      value = input.trim() === "" ? {} : JSON.parse(input);
    } catch {
      throw new Error(`${source}: not valid JSON (expected {"<principal ARN>": "<tenant>"})`);
    }
  }
  const parsed = tenantMappingSchema.safeParse(value ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` "${issue.path.map(String).join(".")}"` : "";
    const message = issue?.code === "invalid_key" ? issue.issues[0]?.message : issue?.message;
    throw new Error(`${source}${where}: ${message ?? "invalid tenant mapping"}`);
  }
  return parsed.data;
}
