import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { LAMBDA_RESPONSE_LIMIT_BYTES } from "../lambdas/core/aws-limits";
import { type FunctionName, ROUTES, routeKeyOf } from "../lambdas/definitions/routes";
import type { HttpEvent } from "../lambdas/handlers/http/request";
import { localContext } from "./lambda-context";
import type { LocalCredentials } from "./local-credentials";
import { verifySigV4 } from "./sigv4-verifier";

/**
 * A local stand-in for API Gateway (HTTP API, payload format 2.0): matches each request
 * against definitions/routes.ts, builds the event API Gateway would build and invokes the
 * route's Lambda handler in process.
 */
export type HttpHandler = (event: HttpEvent, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** Who signed a request, as API Gateway's IAM authorizer reports it. */
export interface LocalIdentity {
  readonly accessKey: string;
  readonly userArn: string;
}

/** API Gateway's own payload limit (10 MB) is far above ours; refuse early past 1 MiB. */
const MAX_REQUEST_BYTES = 1024 * 1024;

interface CompiledRoute {
  readonly method: string;
  readonly routeKey: string;
  readonly pattern: RegExp;
  readonly names: string[];
  readonly function: FunctionName;
}

function compile(): CompiledRoute[] {
  return ROUTES.map((route) => {
    const names: string[] = [];
    const source = route.path
      .replace(/[.*+?^$()|[\]\\]/g, "\\$&")
      .replace(/\\?\{(\w+)\\?\}/g, (_m, name: string) => {
        names.push(name);
        return "([^/]+)";
      });
    return {
      method: route.method,
      routeKey: routeKeyOf(route),
      pattern: new RegExp(`^${source}$`),
      names,
      function: route.function,
    };
  });
}

/** Like API Gateway, pass a malformed %-escape through as it came rather than failing. */
function decodeOrKeep(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function matchRoute(routes: readonly CompiledRoute[], method: string, path: string) {
  for (const route of routes) {
    if (route.method !== method) continue;
    const match = route.pattern.exec(path);
    if (!match) continue;
    const pathParameters: Record<string, string> = {};
    route.names.forEach((name, i) => {
      pathParameters[name] = decodeOrKeep(match[i + 1] ?? "");
    });
    return { route, pathParameters };
  }
  return undefined;
}

async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_REQUEST_BYTES) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

export function toEvent(
  request: IncomingMessage,
  url: URL,
  body: Buffer,
  matched: NonNullable<ReturnType<typeof matchRoute>>,
  identity: LocalIdentity,
): HttpEvent {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(",") : value;
  }
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams)
    query[name] = query[name] === undefined ? value : `${query[name]},${value}`;
  const now = new Date();
  return {
    version: "2.0",
    routeKey: matched.route.routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: url.search ? query : undefined,
    pathParameters: matched.route.names.length > 0 ? matched.pathParameters : undefined,
    body: body.length > 0 ? body.toString("utf8") : undefined,
    isBase64Encoded: false,
    stageVariables: undefined,
    requestContext: {
      accountId: "000000000000",
      apiId: "local",
      domainName: headers.host ?? "127.0.0.1",
      domainPrefix: "local",
      http: {
        method: matched.route.method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? "127.0.0.1",
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: randomUUID(),
      routeKey: matched.route.routeKey,
      stage: "$default",
      time: now.toISOString(),
      timeEpoch: now.getTime(),
      authorizer: {
        iam: {
          accessKey: identity.accessKey,
          accountId: "000000000000",
          callerId: identity.accessKey,
          cognitoIdentity: null,
          principalOrgId: "",
          userArn: identity.userArn,
          userId: identity.accessKey,
        },
      },
    },
  };
}

function send(response: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  response.writeHead(result.statusCode ?? 200, { ...(result.headers as Record<string, string> | undefined) });
  response.end(result.body ?? "");
}

/**
 * Lambda refuses a synchronous response larger than LAMBDA_RESPONSE_LIMIT_BYTES (counted on the
 * serialized result, the body escaped inside it) and API Gateway then answers 500: so does
 * this gateway, so that a handler that would fail in AWS fails here too.
 */
export function withinLambdaLimit(
  result: APIGatewayProxyStructuredResultV2,
): APIGatewayProxyStructuredResultV2 {
  const bytes = Buffer.byteLength(JSON.stringify(result), "utf8");
  if (bytes <= LAMBDA_RESPONSE_LIMIT_BYTES) return result;
  console.error(
    `local gateway: Response payload size (${bytes} bytes) exceeded maximum allowed payload size (${LAMBDA_RESPONSE_LIMIT_BYTES} bytes)`,
  );
  return { statusCode: 500, body: JSON.stringify({ message: "Internal Server Error" }) };
}

function forbidden(message: string): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: 403,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
  };
}

/**
 * Starts the gateway. Every route needs a valid SigV4 signature from a key in the local
 * credentials file, and, like the IAM policies the stack exports, tenant keys may call only
 * /api/* and worker keys only /internal/*.
 */
export async function startHttpGateway(
  handlers: Readonly<Record<FunctionName, HttpHandler>>,
  options: { port: number; host?: string; credentials: LocalCredentials; now?: () => number },
): Promise<{ server: Server; url: string }> {
  const routes = compile();
  const now = options.now ?? Date.now;
  /** host:port names the gateway answers to, known once it listens. */
  let ownHosts = (): ReadonlySet<string> => new Set<string>();
  const server = createServer(async (request, response) => {
    try {
      const rawUrl = request.url ?? "/";
      const url = new URL(rawUrl, "http://local");
      // Only names of this gateway's own address: a page on another site that resolves its own
      // name to 127.0.0.1 (DNS rebinding) cannot reach the API through a browser.
      if (!ownHosts().has((request.headers.host ?? "").toLowerCase())) {
        return send(response, forbidden("The Host header does not name this gateway"));
      }
      const matched = matchRoute(routes, request.method ?? "GET", url.pathname);
      if (!matched)
        return send(response, { statusCode: 404, body: JSON.stringify({ message: "Not Found" }) });
      const body = await readBody(request);
      if (!body)
        return send(response, { statusCode: 413, body: JSON.stringify({ message: "Request too large" }) });
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(",") : value;
      }
      const verdict = await verifySigV4(
        {
          method: matched.route.method,
          rawPath: rawUrl.split("?")[0] ?? "/",
          query: url.searchParams,
          headers,
          body,
        },
        options.credentials,
        now(),
      );
      if (!verdict.ok) return send(response, forbidden(verdict.message));
      const wanted = matched.route.function === "internal" ? "worker" : "tenant";
      if (verdict.credential.kind !== wanted) {
        const { principal } = verdict.credential;
        return send(
          response,
          forbidden(
            `User: ${principal} is not authorized to perform: execute-api:Invoke on resource: ${matched.route.routeKey}`,
          ),
        );
      }
      const identity = { accessKey: verdict.credential.accessKeyId, userArn: verdict.credential.principal };
      const event = toEvent(request, url, body, matched, identity);
      const handler = handlers[matched.route.function];
      send(response, withinLambdaLimit(await handler(event, localContext(matched.route.function))));
    } catch (error) {
      console.error("local gateway: handler threw", error);
      send(response, { statusCode: 500, body: JSON.stringify({ message: "Internal Server Error" }) });
    }
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const names = new Set([host, "localhost", "127.0.0.1", "[::1]"].map((name) => `${name}:${port}`));
  ownHosts = () => names;
  return { server, url: `http://${host}:${port}` };
}
