/**
 * Domain errors: what went wrong, in the core's words. Only the HTTP edge turns them into
 * status codes (handlers/http/error-middleware.ts); adapters translate SDK errors into these.
 */
export abstract class DomainError extends Error {
  abstract readonly code: string;

  /** `field` names the input the error is about (a dotted path: "retry.base", "jobId"). */
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The request is malformed. */
export class ValidationError extends DomainError {
  readonly code = "ValidationError";
}

/** The caller may not do this: the request is unsigned, or from the wrong kind of principal. */
export class ForbiddenError extends DomainError {
  readonly code = "Forbidden";
}

/** The thing does not exist, or belongs to another tenant (the two are indistinguishable). */
export class NotFoundError extends DomainError {
  readonly code = "NotFound";
}

/** The same idempotency key was used before with a different request body. */
export class IdempotencyConflictError extends DomainError {
  readonly code = "IdempotencyConflict";
}

/** The request conflicts with the resource's state (resume a cancelled job, say). */
export class ConflictError extends DomainError {
  readonly code = "Conflict";
}

/** An If-Match named a version of the job that is no longer current. */
export class PreconditionFailedError extends DomainError {
  readonly code = "PreconditionFailed";
}

/** A heartbeat or completion carried a fence that no longer holds the lease. */
export class StaleFenceError extends DomainError {
  readonly code = "StaleFence";
}

/** A per-tenant quota refuses the request for now; `retryAfterSeconds` says when to try again. */
export class QuotaExceededError extends DomainError {
  readonly code = "QuotaExceeded";

  constructor(
    message: string,
    field: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message, field);
  }
}
