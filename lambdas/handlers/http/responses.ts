import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";

/** JSON responses in the shape every jobsched endpoint uses. */
export function json(statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
}

export function errorResponse(statusCode: number, code: string, message: string, field?: string) {
  return json(statusCode, { error: { code, message, ...(field === undefined ? {} : { field }) } });
}
