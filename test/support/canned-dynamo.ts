import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type HttpRequest, HttpResponse } from "@smithy/protocol-http";

/**
 * A DynamoDB client whose every request is answered in process by `respond`, for what the local
 * emulator cannot do (dynalite has no transactions, never throttles, never leaves a batch item
 * unprocessed). The request goes through the whole SDK stack, serialization included, so its
 * middleware sees what it would against DynamoDB.
 */
export interface CannedAnswer {
  readonly status?: number;
  readonly body: unknown;
}

export type Respond = (operation: string, body: Record<string, unknown>) => CannedAnswer;

export function cannedDynamoClient(respond: Respond): DynamoDBClient {
  return new DynamoDBClient({
    region: "us-east-1",
    endpoint: "http://dynamodb.canned.invalid",
    credentials: { accessKeyId: "canned", secretAccessKey: "canned" },
    maxAttempts: 1, // a throttled answer is final: no retry, no back-off
    requestHandler: {
      async handle(request: HttpRequest) {
        // The JSON protocol names the operation in X-Amz-Target: "DynamoDB_20120810.PutItem".
        const target = Object.entries(request.headers).find(
          ([name]) => name.toLowerCase() === "x-amz-target",
        );
        const operation = String(target?.[1] ?? "").split(".")[1] ?? "";
        const raw: unknown = request.body;
        const text = raw instanceof Uint8Array ? new TextDecoder().decode(raw) : String(raw);
        const answer = respond(operation, JSON.parse(text) as Record<string, unknown>);
        const response = new HttpResponse({
          statusCode: answer.status ?? 200,
          headers: { "content-type": "application/x-amz-json-1.0" },
          body: new TextEncoder().encode(JSON.stringify(answer.body)),
        });
        return { response };
      },
    },
  });
}

/** DynamoDB's answer for a refused request: the error's name travels in __type. */
export function serviceError(name: string, extra: Record<string, unknown> = {}): CannedAnswer {
  return {
    status: 400,
    body: { __type: `com.amazonaws.dynamodb.v20120810#${name}`, message: name, ...extra },
  };
}
