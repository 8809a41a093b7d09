import type { Context } from "aws-lambda";
import type { HttpEvent } from "../../lambdas/handlers/http/request";

/** An API Gateway HTTP API (payload 2.0) event as IAM auth delivers it to the handler. */
export function httpEvent(
  routeKey: string,
  options: {
    body?: unknown;
    rawBody?: string;
    pathParameters?: Record<string, string>;
    userArn?: string | null;
  } = {},
): HttpEvent {
  const [method = "GET", path = "/"] = routeKey.split(" ");
  const userArn = options.userArn === undefined ? "arn:aws:iam::111122223333:role/tenant-a" : options.userArn;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const event = {
    version: "2.0",
    routeKey,
    rawPath: path,
    rawQueryString: "",
    headers: { "content-type": "application/json" },
    pathParameters: options.pathParameters,
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: "111122223333",
      apiId: "test",
      domainName: "test",
      domainPrefix: "test",
      http: { method, path, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "vitest" },
      requestId: "req-1",
      routeKey,
      stage: "$default",
      time: "",
      timeEpoch: 0,
      authorizer:
        userArn === null
          ? undefined
          : {
              iam: {
                accessKey: "AKIA",
                accountId: "111122223333",
                callerId: "AID",
                cognitoIdentity: null,
                principalOrgId: "",
                userArn,
                userId: "AID",
              },
            },
    },
  };
  return event as HttpEvent;
}

export const lambdaContext = {
  functionName: "test",
  awsRequestId: "req-1",
  getRemainingTimeInMillis: () => 29_000,
} as unknown as Context;

export interface JsonResult {
  status: number;
  body: Record<string, unknown> & { error?: { code: string; message: string; field?: string } };
}

/** Invokes a handler and parses its JSON answer. */
export async function invoke(
  handler: (event: HttpEvent, context: Context) => Promise<unknown>,
  event: HttpEvent,
): Promise<JsonResult> {
  const result = (await handler(event, lambdaContext)) as { statusCode: number; body: string };
  return { status: result.statusCode, body: JSON.parse(result.body) as JsonResult["body"] };
}
