import type { CreateJobRequest } from "@jobsched/contract";
import type { SchedulerSettings } from "../definitions/settings";
import type { TenantAccounts } from "../definitions/target-role-config";
import { destinationRulesOf, webhookUrlProblem } from "./destination-rules";
import { durationMs, isoDuration } from "./duration";
import { ValidationError } from "./errors";
import { formatInstant } from "./instant";
import type { Job } from "./job";
import type { Schedule } from "./schedule/schedule";
import { scheduleFromFields } from "./schedule/schedule-input";
import type { Target } from "./target";
import { targetRoleProblem } from "./target-roles";

/**
 * What a caller defines about a job, as opposed to where it stands (status, next run, audit):
 * built from a create request, and turned back into one so an update can merge a patch into it
 * and check the result with the very rules a create is checked with.
 */
export type JobDefinition = Pick<
  Job,
  | "payload"
  | "schedule"
  | "missedRuns"
  | "overlapPolicy"
  | "delivery"
  | "target"
  | "labels"
  | "maxLatenessMs"
  | "maxAttempts"
  | "retry"
  | "leaseSeconds"
>;

/** The request fields that define a job (all of a create's but `type` and `idempotencyKey`). */
export type DefinitionRequest = Omit<CreateJobRequest, "type" | "idempotencyKey" | "importedFrom" | "paused">;

/** Whose job it is: a Lambda or SQS target's role must be the tenant's own (decision 0035). */
export interface JobOwner {
  readonly tenant: string;
  readonly tenantAccounts?: TenantAccounts | undefined;
}

export function definitionFromRequest(
  settings: SchedulerSettings,
  request: DefinitionRequest,
  /** What draws the jitter offsets: the job's id, or the id it was imported from (jitterSeedOf). */
  jitterSeed: string,
  owner: JobOwner,
): JobDefinition {
  const schedule = scheduleFromFields({
    jitter: request.jitter,
    jitterSeed,
    runAt: request.runAt,
    cron: request.cron,
    timeZone: request.timeZone,
    dstPolicy: request.dstPolicy,
    every: request.interval?.every,
    everyField: "interval.every",
    startAt: request.startAt,
    endAt: request.endAt,
  });
  // The payload's hard ceiling is in the schema; the deployment may set a lower one.
  const payloadBytes = Buffer.byteLength(JSON.stringify(request.payload ?? null), "utf8");
  if (payloadBytes > settings.maxPayloadBytes) {
    throw new ValidationError(
      `payload: must be at most ${settings.maxPayloadBytes} bytes of JSON`,
      "payload",
    );
  }
  const retry = {
    baseMs:
      request.retry?.base === undefined
        ? settings.retryBaseSeconds * 1000
        : durationMs(request.retry.base, "retry.base"),
    capMs:
      request.retry?.cap === undefined
        ? settings.retryCapSeconds * 1000
        : durationMs(request.retry.cap, "retry.cap"),
  };
  if (retry.capMs < retry.baseMs)
    throw new ValidationError("retry.cap: must not be less than retry.base", "retry.cap");
  return {
    payload: request.payload ?? null,
    schedule,
    missedRuns: request.missedRuns,
    // The default is not stored: jobs from before the field read the same.
    overlapPolicy: request.overlapPolicy === "allow" ? undefined : request.overlapPolicy,
    delivery: request.delivery === "at-most-once" ? "at-most-once" : undefined,
    target: request.target === undefined ? undefined : checkedTarget(request.target, settings, owner),
    labels:
      request.labels === undefined || Object.keys(request.labels).length === 0 ? undefined : request.labels,
    maxLatenessMs:
      request.maxLateness === undefined ? undefined : durationMs(request.maxLateness, "maxLateness"),
    maxAttempts: request.maxAttempts,
    retry,
    leaseSeconds: request.leaseSeconds ?? settings.leaseSeconds,
  };
}

/**
 * A target's destination, checked beyond its shape: a webhook URL by the destination rules
 * (https, no private addresses in AWS), a queue URL as an SQS queue's (in AWS, SQS's own host),
 * a role as one in the owner's own account that the dispatcher may assume.
 */
function checkedTarget(target: Target, settings: SchedulerSettings, owner: JobOwner): Target {
  const rules = destinationRulesOf(settings);
  if (target.kind !== "https") {
    const problem = targetRoleProblem(target.roleArn, owner.tenant, {
      namePattern: settings.targetRoleNames,
      tenantAccounts: owner.tenantAccounts,
    });
    if (problem) throw new ValidationError(`target.roleArn: ${problem}`, "target.roleArn");
  }
  if (target.kind === "https") {
    const problem = webhookUrlProblem(target.url, rules);
    if (problem) throw new ValidationError(`target.url: ${problem}`, "target.url");
  }
  if (target.kind === "sqs" && !SQS_QUEUE_URL.test(target.queueUrl)) {
    const local = rules.allowPrivate && webhookUrlProblem(target.queueUrl, rules) === undefined;
    if (!local || !/\/\d{12}\/[A-Za-z0-9_-]{1,80}(\.fifo)?$/.test(target.queueUrl)) {
      throw new ValidationError(
        "target.queueUrl: must be an SQS queue URL, like https://sqs.us-east-1.amazonaws.com/123456789012/reminders",
        "target.queueUrl",
      );
    }
  }
  return target;
}

/** An SQS queue's URL in AWS (standard or FIFO). */
const SQS_QUEUE_URL =
  /^https:\/\/(sqs\.[a-z0-9-]+\.amazonaws\.com(\.cn)?|[a-z0-9-]+\.queue\.amazonaws\.com)\/\d{12}\/[A-Za-z0-9_-]{1,80}(\.fifo)?$/;

/** A job's definition as request fields: what an update merges its patch into. */
export function requestFieldsOf(job: JobDefinition): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    payload: job.payload,
    ...scheduleRequestFields(job.schedule),
    missedRuns: job.missedRuns,
    overlapPolicy: job.overlapPolicy ?? "allow",
    delivery: job.delivery ?? "at-least-once",
    maxAttempts: job.maxAttempts,
    retry: { base: isoDuration(job.retry.baseMs), cap: isoDuration(job.retry.capMs) },
    leaseSeconds: job.leaseSeconds,
  };
  if (job.maxLatenessMs !== undefined) fields.maxLateness = isoDuration(job.maxLatenessMs);
  if (job.labels !== undefined) fields.labels = { ...job.labels };
  if (job.target !== undefined) fields.target = { ...job.target };
  return fields;
}

function scheduleRequestFields(schedule: Schedule): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (schedule.jitter) fields.jitter = isoDuration(schedule.jitter.windowMs);
  if (schedule.kind === "once") return { ...fields, runAt: formatInstant(schedule.runAt) };
  if (schedule.startAt !== undefined) fields.startAt = formatInstant(schedule.startAt);
  if (schedule.endAt !== undefined) fields.endAt = formatInstant(schedule.endAt);
  if (schedule.kind === "interval") return { ...fields, interval: { every: isoDuration(schedule.everyMs) } };
  return {
    ...fields,
    cron: schedule.cron,
    timeZone: schedule.timeZone,
    ...(schedule.dstPolicy === undefined ? {} : { dstPolicy: schedule.dstPolicy }),
  };
}

/** A job's jitter offsets are drawn from its id, or from the id it had before an import. */
export function jitterSeedOf(job: {
  readonly jobId: string;
  readonly importedFrom?: string | undefined;
}): string {
  return job.importedFrom ?? job.jobId;
}
