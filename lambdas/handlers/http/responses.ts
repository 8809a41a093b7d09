import type { ErrorResponse } from "@jobsched/contract";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";

/** JSON responses in the shape every jobsched endpoint uses. */
export function json(
  statusCode: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  };
}

/** An error answer, shaped as the contract's error response. */
export function errorResponse(statusCode: number, code: string, message: string, field?: string) {
  const body: ErrorResponse = { error: { code, message, ...(field === undefined ? {} : { field }) } };
  return json(statusCode, body);
}
