import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { parseWorkerBindings, type WorkerBindings } from "../lambdas/definitions/worker-bindings";

/**
 * The local credentials file: access keys, their secrets, the principal each stands for and
 * whether it is a tenant or a worker; a worker also lists the tenants it serves (its worker
 * binding, as CDK context jobsched:workers gives it in AWS). local/credentials.json ships the
 * documented dev defaults; JOBSCHED_CREDENTIALS_FILE points at another file. A file that is
 * not valid (a worker that names no tenant, say) stops the runtime at start-up.
 */
const common = {
  accessKeyId: z.string().min(16),
  secretAccessKey: z.string().min(8),
  principal: z.string().startsWith("arn:"),
};
const credentialSchema = z.discriminatedUnion("kind", [
  z.strictObject({ ...common, kind: z.literal("tenant") }),
  // The tenant list is checked by parseWorkerBindings, the same rules as in AWS.
  z.strictObject({ ...common, kind: z.literal("worker"), tenants: z.array(z.string()) }),
]);
const fileSchema = z.object({
  about: z.string().optional(),
  region: z.string(),
  credentials: z.array(credentialSchema).min(1),
});

export type LocalCredential = z.output<typeof credentialSchema>;
export interface LocalCredentials {
  readonly region: string;
  readonly byAccessKey: ReadonlyMap<string, LocalCredential>;
  /** Worker principal -> the tenants it serves, from the worker entries. */
  readonly workerBindings: WorkerBindings;
  readonly first: (kind: LocalCredential["kind"]) => LocalCredential;
}

export const DEFAULT_CREDENTIALS_FILE = resolve(import.meta.dirname, "credentials.json");

export function loadLocalCredentials(
  file = process.env.JOBSCHED_CREDENTIALS_FILE ?? DEFAULT_CREDENTIALS_FILE,
): LocalCredentials {
  const parsed = fileSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${file}: ${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}`);
  }
  const { credentials, region } = parsed.data;
  const byAccessKey = new Map(credentials.map((c) => [c.accessKeyId, c]));
  const workerBindings = parseWorkerBindings(
    Object.fromEntries(credentials.flatMap((c) => (c.kind === "worker" ? [[c.principal, c.tenants]] : []))),
    `${file}: worker`,
  );
  return {
    region,
    byAccessKey,
    workerBindings,
    first: (kind: LocalCredential["kind"]) => {
      const found = credentials.find((c) => c.kind === kind);
      if (!found) throw new Error(`${file} has no ${kind} credentials`);
      return found;
    },
  };
}

/** The worker credential that serves the most tenants (the dev pool): the example worker's. */
export function widestWorker(credentials: LocalCredentials): LocalCredential {
  const workers = [...credentials.byAccessKey.values()].flatMap((c) => (c.kind === "worker" ? [c] : []));
  const widest = workers.sort((a, b) => b.tenants.length - a.tenants.length)[0];
  if (!widest) throw new Error("the credentials file has no worker credentials");
  return widest;
}
