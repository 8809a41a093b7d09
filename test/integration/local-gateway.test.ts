import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { request as httpRequest, type Server } from "node:http";
import { promisify } from "node:util";
import { createSignedFetch } from "@jobsched/worker";
import { Hash } from "@smithy/hash-node";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpEvent } from "../../lambdas/handlers/http/request";
import { startHttpGateway } from "../../local/http-gateway";
import { loadLocalCredentials } from "../../local/local-credentials";

/** The local API Gateway stand-in, with handlers that echo the event they were given. */
const credentials = loadLocalCredentials();
const tenant = credentials.first("tenant");
const worker = credentials.first("worker");
const run = promisify(execFile);

describe("the local HTTP gateway", () => {
  let server: Server;
  let url: string;
  let clockSkewMs = 0;
  const seen: HttpEvent[] = [];

  beforeAll(async () => {
    const echo = (fn: string) => async (event: HttpEvent) => {
      seen.push(event);
      if (event.body === '"throw"') throw new Error("handler bug");
      return { statusCode: 200, headers: { "x-fn": fn }, body: JSON.stringify({ fn }) };
    };
    ({ server, url } = await startHttpGateway(
      { api: echo("api"), internal: echo("internal") },
      { port: 0, credentials, now: () => Date.now() + clockSkewMs },
    ));
  });

  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const as = (who: typeof tenant) =>
    createSignedFetch({ endpoint: url, region: credentials.region, credentials: who });

  it("builds the HTTP API 2.0 event with route key, path parameters and the signer's identity", async () => {
    const response = await as(tenant)("GET", "/api/v1/jobs/j_abc", { query: { x: "1" } });
    expect(response.status).toBe(200);
    expect(seen.at(-1)).toMatchObject({
      version: "2.0",
      routeKey: "GET /api/v1/jobs/{jobId}",
      rawPath: "/api/v1/jobs/j_abc",
      rawQueryString: "x=1",
      queryStringParameters: { x: "1" },
      pathParameters: { jobId: "j_abc" },
      requestContext: { authorizer: { iam: { userArn: tenant.principal, accessKey: tenant.accessKeyId } } },
    });
  });

  it("routes worker paths to the internal function and passes the body through", async () => {
    const response = await as(worker)("POST", "/internal/leases/r_1/complete", { body: { fence: 1 } });
    expect(response.body).toEqual({ fn: "internal" });
    expect(seen.at(-1)).toMatchObject({ pathParameters: { runId: "r_1" }, body: '{"fence":1}' });
  });

  it("answers 403 to an unsigned request, a wrong signature, and a signature over 5 minutes old", async () => {
    const unsigned = await fetch(`${url}/api/v1/jobs`);
    expect(unsigned.status).toBe(403);
    expect(await unsigned.json()).toEqual({ message: "Missing Authentication Token" });

    const wrong = await as({ ...tenant, secretAccessKey: "not-the-secret" })("GET", "/api/v1/jobs");
    expect(wrong.status).toBe(403);
    expect(JSON.stringify(wrong.body)).toContain("signature we calculated does not match");

    clockSkewMs = 6 * 60_000; // the gateway's clock is 6 minutes ahead of the signer's
    const stale = await as(tenant)("GET", "/api/v1/jobs");
    clockSkewMs = 0;
    expect(stale.status).toBe(403);
    expect(JSON.stringify(stale.body)).toContain("Signature expired");
  });

  it("refuses a signature over a body that was changed in flight", async () => {
    const signer = as(tenant);
    const original = globalThis.fetch;
    globalThis.fetch = (input, init) => original(input, { ...init, body: '{"tampered":true}' });
    try {
      expect((await signer("POST", "/api/v1/jobs", { body: { type: "x" } })).status).toBe(403);
    } finally {
      globalThis.fetch = original;
    }
  });

  it("refuses a body whose signed x-amz-content-sha256 is the hash of another body", async () => {
    const signed = async (claimedBody: string, sentBody: string) => {
      const target = new URL(`${url}/api/v1/jobs`);
      const signer = new SignatureV4({
        service: "execute-api",
        region: credentials.region,
        credentials: tenant,
        sha256: Hash.bind(null, "sha256"),
      });
      const request = await signer.sign(
        new HttpRequest({
          method: "POST",
          protocol: "http:",
          hostname: target.hostname,
          port: Number(target.port),
          path: target.pathname,
          headers: {
            host: target.host,
            "content-type": "application/json",
            "x-amz-content-sha256": createHash("sha256").update(claimedBody).digest("hex"),
          },
          body: claimedBody,
        }),
      );
      const { host: _host, ...headers } = request.headers;
      return fetch(target, { method: "POST", headers, body: sentBody });
    };
    const honest = await signed('{"type":"a"}', '{"type":"a"}');
    expect(honest.status).toBe(200);
    const swapped = await signed('{"type":"a"}', '{"type":"swapped"}');
    expect(swapped.status).toBe(403);
    expect(JSON.stringify(await swapped.json())).toContain("x-amz-content-sha256");
    expect(seen.at(-1)?.body).toBe('{"type":"a"}'); // the swapped body never reached a handler
  });

  it("answers only to its own address in the Host header", async () => {
    const port = new URL(url).port;
    const withHost = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(
          { host: "127.0.0.1", port, path: "/api/v1/jobs", headers: { host } },
          (response) => {
            let body = "";
            response.on("data", (chunk: Buffer) => {
              body += chunk.toString("utf8");
            });
            response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
          },
        );
        request.on("error", reject);
        request.end();
      });
    // Unsigned: past the Host check, it is refused for its missing signature.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      expect(await withHost(host)).toEqual({
        status: 403,
        body: JSON.stringify({ message: "Missing Authentication Token" }),
      });
    }
    for (const host of [
      `evil.example:${port}`,
      "127.0.0.1:1",
      "127.0.0.1",
      `localhost.evil.example:${port}`,
    ]) {
      const answer = await withHost(host);
      expect(answer.status, host).toBe(403);
      expect(answer.body, host).toContain("The Host header does not name this gateway");
    }
  });

  it("lets tenants call only /api/* and workers only /internal/*", async () => {
    const workerOnApi = await as(worker)("GET", "/api/v1/jobs");
    const tenantOnInternal = await as(tenant)("POST", "/internal/leases", { body: {} });
    expect([workerOnApi.status, tenantOnInternal.status]).toEqual([403, 403]);
    expect(JSON.stringify(workerOnApi.body)).toContain("is not authorized to perform: execute-api:Invoke");
  });

  it("accepts a request signed by curl --aws-sigv4, a client no one here wrote", async () => {
    const { stdout } = await run("curl", [
      "-s",
      "--aws-sigv4",
      `aws:amz:${credentials.region}:execute-api`,
      "--user",
      `${tenant.accessKeyId}:${tenant.secretAccessKey}`,
      "-H",
      "content-type: application/json",
      "-X",
      "POST",
      `${url}/api/v1/jobs`,
      "-d",
      '{"type":"curl"}',
    ]);
    expect(JSON.parse(stdout)).toEqual({ fn: "api" });
    expect(seen.at(-1)?.body).toBe('{"type":"curl"}');
  });

  it("answers 404 for unknown paths and methods, as API Gateway does", async () => {
    expect((await as(tenant)("GET", "/nope")).status).toBe(404);
    expect((await as(tenant)("PATCH", "/api/v1/jobs")).status).toBe(404);
  });

  it("passes a malformed escape through instead of failing", async () => {
    const response = await fetch(`${url}/api/v1/jobs/%ZZ`);
    expect(response.status).toBe(403); // unsigned, but routed and answered rather than crashing
  });

  it("refuses bodies over 1 MiB and survives a handler that throws", async () => {
    const big = await fetch(`${url}/api/v1/jobs`, { method: "POST", body: "x".repeat(1024 * 1024 + 1) });
    expect(big.status).toBe(413);
    const broken = await as(tenant)("POST", "/api/v1/jobs", { body: "throw" });
    expect(broken.status).toBe(500);
    expect((await as(tenant)("GET", "/api/v1/jobs/j_1")).status).toBe(200);
  });
});
