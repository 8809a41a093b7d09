import { createHash } from "node:crypto";

/**
 * Identifiers. A job id is `j_` plus 20 lowercase base-32 characters (100 bits); a run id
 * names its job and its scheduled instant, so any run can be read straight from its id with
 * no lookup index.
 */
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base 32, lowercase
const JOB_ID_CHARS = 20;

export type RandomBytes = (size: number) => Uint8Array;

function encodeBase32(bytes: Uint8Array, length: number): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < length) {
      bits -= 5;
      out += ALPHABET[(buffer >> bits) & 31];
    }
  }
  return out;
}

export function newJobId(randomBytes: RandomBytes): string {
  return `j_${encodeBase32(randomBytes(13), JOB_ID_CHARS)}`;
}

/**
 * The job id for an idempotent create: a hash of the tenant and the key, so a retried request
 * lands on the same item and a conditional put detects it without a second table or a
 * transaction.
 */
export function jobIdForIdempotencyKey(tenant: string, idempotencyKey: string): string {
  const digest = createHash("sha256").update(`${tenant}\u0000${idempotencyKey}`).digest();
  return `j_${encodeBase32(digest, JOB_ID_CHARS)}`;
}

const JOB_ID_PATTERN = /^j_[0-9a-z]{20}$/;

export function isJobId(text: string): boolean {
  return JOB_ID_PATTERN.test(text);
}

/** `r_<job id suffix>_<scheduled epoch ms>`. */
export function runIdOf(jobId: string, scheduledFor: number): string {
  return `r_${jobId.slice(2)}_${scheduledFor}`;
}

export function parseRunId(runId: string): { jobId: string; scheduledFor: number } | undefined {
  const match = /^r_([0-9a-z]{20})_(\d{1,15})$/.exec(runId);
  if (!match?.[1] || !match[2]) return undefined;
  return { jobId: `j_${match[1]}`, scheduledFor: Number(match[2]) };
}
