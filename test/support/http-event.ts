import type { Context } from "aws-lambda";
import { LOCAL_SETTINGS } from "../../lambdas/definitions/settings";
import type { HttpEvent } from "../../lambdas/handlers/http/request";

/** The tenant principal httpEvent signs as by default. */
export const TEST_TENANT_ARN = "arn:aws:iam::111122223333:role/tenant-a";
/** A worker principal bound to TEST_TENANT_ARN in every test stack (see stack.ts). */
export const TEST_WORKER_ARN = "arn:aws:iam::111122223333:role/worker-a";
export const TEST_WORKER_BINDINGS: ReadonlyMap<string, readonly string[]> = new Map([
  [TEST_WORKER_ARN, [TEST_TENANT_ARN]],
]);

/** The runtime config of handler tests whose AWS clients are mocks (aws-sdk-client-mock). */
export const MOCKED_AWS_CONFIG = {
  region: "us-east-1",
  tableName: "jobs",
  runQueueUrl: "https://sqs.local/runs",
  sweepQueueUrl: "https://sqs.local/sweeps",
  pushQueueUrl: "https://sqs.local/push",
  dynamodbEndpoint: undefined,
  sqsEndpoint: undefined,
  settings: LOCAL_SETTINGS,
  workerBindings: TEST_WORKER_BINDINGS,
} as const;

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
  const userArn = options.userArn === undefined ? TEST_TENANT_ARN : options.userArn;
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

/** An event from the test worker (bound to the default test tenant), for /internal/* routes. */
export function workerEvent(
  routeKey: string,
  options: Omit<Parameters<typeof httpEvent>[1] & object, "userArn"> = {},
) {
  return httpEvent(routeKey, { ...options, userArn: TEST_WORKER_ARN });
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
