import { createHash } from "node:crypto";
import type { Job } from "../../core/job";
import { jobPk } from "./job-item";

/**
 * Labels are found through small pointer items beside their job (pk = JOB#<jobId>, sk =
 * LABEL#<key>), filed in the tenant index under a partition of their own per tenant and label:
 * a label query reads only the jobs that carry the label, and the sweep's writes, which change
 * the job item many times a day, never touch them. The job item's `labels` stay the truth: a
 * pointer is written before its job and removed after, and a listing checks every job it reads,
 * so a pointer left by a crash (or by a create refused as a conflict) matches nothing.
 *
 * The partition names the tenant by a hash (fixed length, whatever the tenant's principal), so
 * a pointer's key stays far inside DynamoDB's 2,048-byte limit for an index partition key.
 */
export const LABEL_SK_PREFIX = "LABEL#";

export function labelPartition(tenant: string, key: string, value: string): string {
  const tenantHash = createHash("sha256").update(tenant).digest("base64url");
  return `label#${tenantHash}#${key}=${value}`;
}

export function labelItems(job: Pick<Job, "jobId" | "tenant" | "createdAt" | "labels">) {
  return Object.entries(job.labels ?? {}).map(([key, value]) => ({
    pk: jobPk(job.jobId),
    sk: `${LABEL_SK_PREFIX}${key}`,
    jobId: job.jobId,
    // The tenant index's keys: label queries read it newest first, as the plain listing does.
    jobTenant: labelPartition(job.tenant, key, value),
    createdAt: job.createdAt,
  }));
}
