import type { MiddlewareObj } from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { Log } from "../../core/deps";
import {
  ConflictError,
  DomainError,
  ForbiddenError,
  IdempotencyConflictError,
  NotFoundError,
  PreconditionFailedError,
  QuotaExceededError,
  StaleFenceError,
  ValidationError,
} from "../../core/errors";
import { errorResponse } from "./responses";

/** Domain errors become HTTP statuses here, at the edge, and nowhere else. */
export function statusOf(error: DomainError): number {
  if (error instanceof ValidationError) return 400;
  if (error instanceof NotFoundError) return 404;
  if (error instanceof IdempotencyConflictError || error instanceof StaleFenceError) return 409;
  if (error instanceof ConflictError) return 409;
  if (error instanceof PreconditionFailedError) return 412;
  if (error instanceof ForbiddenError) return 403;
  if (error instanceof QuotaExceededError) return 429;
  return 500;
}

/**
 * 4xx errors carry their message and field to the caller; anything unexpected is logged with
 * its stack and answered with a generic 500 that leaks nothing.
 */
export function httpErrors(
  log: Log,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> {
  return {
    onError: async (request) => {
      const error = request.error;
      if (error instanceof DomainError && statusOf(error) < 500) {
        const response = errorResponse(statusOf(error), error.code, error.message, error.field);
        request.response =
          error instanceof QuotaExceededError
            ? {
                ...response,
                headers: { ...response.headers, "retry-after": String(error.retryAfterSeconds) },
              }
            : response;
        return;
      }
      log.error("request failed", {
        routeKey: request.event.routeKey,
        error:
          error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : error,
      });
      request.response = errorResponse(500, "InternalError", "internal error; the request may be retried");
    },
  };
}
