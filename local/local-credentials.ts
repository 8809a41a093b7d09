import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";

/**
 * The local credentials file: access keys, their secrets, the principal each stands for and
 * whether it is a tenant or a worker. local/credentials.json ships the documented dev
 * defaults; JOBSCHED_CREDENTIALS_FILE points at another file.
 */
const credentialSchema = z.object({
  accessKeyId: z.string().min(16),
  secretAccessKey: z.string().min(8),
  principal: z.string().startsWith("arn:"),
  kind: z.enum(["tenant", "worker"]),
});
const fileSchema = z.object({ region: z.string(), credentials: z.array(credentialSchema).min(1) });

export type LocalCredential = z.output<typeof credentialSchema>;
export interface LocalCredentials {
  readonly region: string;
  readonly byAccessKey: ReadonlyMap<string, LocalCredential>;
  readonly first: (kind: LocalCredential["kind"]) => LocalCredential;
}

export const DEFAULT_CREDENTIALS_FILE = resolve(import.meta.dirname, "credentials.json");

export function loadLocalCredentials(
  file = process.env.JOBSCHED_CREDENTIALS_FILE ?? DEFAULT_CREDENTIALS_FILE,
) {
  const parsed = fileSchema.parse(JSON.parse(readFileSync(file, "utf8")));
  const byAccessKey = new Map(parsed.credentials.map((c) => [c.accessKeyId, c]));
  return {
    region: parsed.region,
    byAccessKey,
    first: (kind: LocalCredential["kind"]) => {
      const found = parsed.credentials.find((c) => c.kind === kind);
      if (!found) throw new Error(`${file} has no ${kind} credentials`);
      return found;
    },
  } satisfies LocalCredentials;
}
