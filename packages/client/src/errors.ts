import { errorResponse, gatewayRefusal } from "@jobsched/contract";

/**
 * An answer the API refused: its HTTP status, the error's `code` (ValidationError,
 * NotFoundError, ...), its message, and for a bad input the `field` it names as a dotted path
 * (`runAt`, `jobs.3.cron`). Subclasses by status let a caller catch one kind:
 *
 *   try { await client.getJob(id) } catch (e) { if (e instanceof NotFoundError) ... }
 */
export class JobschedError extends Error {
  override readonly name: string = "JobschedError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    /** A 429's or 503's Retry-After, in seconds, when the API gave one. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** 400: the request is malformed; `field` names the input at fault. Nothing was changed. */
export class ValidationError extends JobschedError {
  override readonly name = "ValidationError";
}
/** 401 or 403: the credentials are missing, wrong, or not allowed this call. */
export class AccessDeniedError extends JobschedError {
  override readonly name = "AccessDeniedError";
}
/** 404: no such job, run or dead letter for the caller (another tenant's is 404 too). */
export class NotFoundError extends JobschedError {
  override readonly name = "NotFoundError";
}
/** 409: the job's state does not allow it (resuming a cancelled job, ...). */
export class ConflictError extends JobschedError {
  override readonly name = "ConflictError";
}
/** 412: an update's `ifMatch` names a version the job has moved past. Read it again. */
export class PreconditionFailedError extends JobschedError {
  override readonly name = "PreconditionFailedError";
}
/** 429: a quota or the API's throttle, still refused after the client's retries. */
export class ThrottledError extends JobschedError {
  override readonly name = "ThrottledError";
}
/** 5xx: the API failed, still after the client's retries where the call was safe to repeat. */
export class ServerError extends JobschedError {
  override readonly name = "ServerError";
}
/** A 2xx answer whose body is not what the contract says: a client and server out of step. */
export class UnexpectedResponseError extends JobschedError {
  override readonly name = "UnexpectedResponseError";
}

/** The typed error for an error answer: the API's `{ error: { code, message, field } }`, or the gateway's `{ message }`. */
export function errorOf(status: number, body: unknown, retryAfterSeconds?: number): JobschedError {
  const api = errorResponse.safeParse(body);
  const gateway = gatewayRefusal.safeParse(body);
  const code = api.success ? api.data.error.code : `HTTP${status}`;
  const message = api.success
    ? api.data.error.message
    : gateway.success
      ? gateway.data.message
      : `HTTP ${status}${typeof body === "string" && body !== "" ? `: ${body.slice(0, 200)}` : ""}`;
  const field = api.success ? api.data.error.field : undefined;
  const kind =
    status === 400
      ? ValidationError
      : status === 401 || status === 403
        ? AccessDeniedError
        : status === 404
          ? NotFoundError
          : status === 409
            ? ConflictError
            : status === 412
              ? PreconditionFailedError
              : status === 429
                ? ThrottledError
                : status >= 500
                  ? ServerError
                  : JobschedError;
  return new kind(status, code, message, field, retryAfterSeconds);
}
