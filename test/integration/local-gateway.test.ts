import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpEvent } from "../../lambdas/handlers/http/request";
import { DEV_IDENTITY, startHttpGateway } from "../../local/http-gateway";

/** The local API Gateway stand-in, with handlers that echo the event they were given. */
describe("the local HTTP gateway", () => {
  let server: Server;
  let url: string;
  const seen: HttpEvent[] = [];

  beforeAll(async () => {
    const echo = (fn: string) => async (event: HttpEvent) => {
      seen.push(event);
      if (event.body === "throw") throw new Error("handler bug");
      return { statusCode: 200, headers: { "x-fn": fn }, body: JSON.stringify({ fn }) };
    };
    ({ server, url } = await startHttpGateway({ api: echo("api"), internal: echo("internal") }, { port: 0 }));
  });

  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it("builds the HTTP API 2.0 event with route key, path parameters and the IAM identity", async () => {
    const response = await fetch(`${url}/api/v1/jobs/j_abc?x=1`, { headers: { "X-Trace": "t1" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-fn")).toBe("api");
    const event = seen.at(-1);
    expect(event).toMatchObject({
      version: "2.0",
      routeKey: "GET /api/v1/jobs/{jobId}",
      rawPath: "/api/v1/jobs/j_abc",
      rawQueryString: "x=1",
      queryStringParameters: { x: "1" },
      pathParameters: { jobId: "j_abc" },
      headers: expect.objectContaining({ "x-trace": "t1" }),
      requestContext: { authorizer: { iam: { userArn: DEV_IDENTITY.userArn } } },
    });
  });

  it("routes worker paths to the internal function and passes the body through", async () => {
    const response = await fetch(`${url}/internal/leases/r_1/complete`, {
      method: "POST",
      body: '{"fence":1}',
    });
    expect(await response.json()).toEqual({ fn: "internal" });
    expect(seen.at(-1)).toMatchObject({ pathParameters: { runId: "r_1" }, body: '{"fence":1}' });
  });

  it("answers 404 for unknown paths and methods, as API Gateway does", async () => {
    expect((await fetch(`${url}/nope`)).status).toBe(404);
    expect((await fetch(`${url}/api/v1/jobs`, { method: "DELETE" })).status).toBe(404);
  });

  it("passes a malformed escape through instead of failing", async () => {
    const response = await fetch(`${url}/api/v1/jobs/%ZZ`);
    expect(response.status).toBe(200);
    expect(seen.at(-1)?.pathParameters).toEqual({ jobId: "%ZZ" });
  });

  it("refuses bodies over 1 MiB and survives a handler that throws", async () => {
    const big = await fetch(`${url}/api/v1/jobs`, { method: "POST", body: "x".repeat(1024 * 1024 + 1) });
    expect(big.status).toBe(413);
    const broken = await fetch(`${url}/api/v1/jobs`, { method: "POST", body: "throw" });
    expect(broken.status).toBe(500);
    expect((await fetch(`${url}/api/v1/jobs/j_1`)).status).toBe(200);
  });
});
