import { AWS_TARGET_TIMEOUT_SECONDS, type JobResponse } from "@jobsched/contract";

/**
 * Where a job's runs go and how they are handed over: a push job's target (its kind, address,
 * role and invocation), or, for a worker job, the workers that lease its type.
 */
export function TargetFacts({ job }: { readonly job: JobResponse }) {
  const { target } = job;
  const delivery =
    job.delivery === "at-most-once"
      ? "at-most-once: one attempt, never retried (a lapsed lease is recorded lost)"
      : `at-least-once, up to ${job.maxAttempts} attempt(s), backoff ${job.retry.base} to ${job.retry.cap}`;
  if (!target)
    return (
      <dl class="facts" id="job-delivery">
        <dt>Runs go to</dt>
        <dd>
          workers that lease type <code>{job.type}</code> (pull), each run leased for {job.leaseSeconds} s at
          a time
        </dd>
        <dt>Delivery</dt>
        <dd>{delivery}</dd>
      </dl>
    );
  return (
    <dl class="facts" id="job-target-facts">
      <dt>Kind</dt>
      <dd>
        {target.kind === "https"
          ? "HTTPS webhook"
          : target.kind === "lambda"
            ? "AWS Lambda function"
            : "Amazon SQS queue"}
      </dd>
      {target.kind === "https" && (
        <>
          <dt>URL</dt>
          <dd class="mono">{target.url}</dd>
          <dt>Invocation</dt>
          <dd>
            POST of the run's envelope, signed with the tenant's webhook secret (Standard Webhooks); a 2xx
            within {target.timeoutSeconds} s succeeds, at most {target.concurrency} at a time per dispatcher
            instance
          </dd>
        </>
      )}
      {target.kind === "lambda" && (
        <>
          <dt>Function</dt>
          <dd class="mono">{target.functionArn}</dd>
          <dt>Role</dt>
          <dd class="mono">{target.roleArn}</dd>
          <dt>Invocation</dt>
          <dd>
            {target.invocation === "async"
              ? "asynchronous (InvocationType Event): accepted is delivered; the function's own errors are Lambda's to retry"
              : `synchronous (RequestResponse): waits for the function's answer, at most ${AWS_TARGET_TIMEOUT_SECONDS} s; a function error fails the attempt`}
          </dd>
        </>
      )}
      {target.kind === "sqs" && (
        <>
          <dt>Queue</dt>
          <dd class="mono">{target.queueUrl}</dd>
          <dt>Role</dt>
          <dd class="mono">{target.roleArn}</dd>
          <dt>Invocation</dt>
          <dd>SendMessage of the run's envelope, as the role</dd>
        </>
      )}
      <dt>Delivery</dt>
      <dd>{delivery}</dd>
    </dl>
  );
}
