import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { createJobResponse, jobsPageResponse } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleServer, startConsoleServer } from "../../cli/console/console-server";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack } from "../support/stack";

/**
 * The console's server (issue 19): it relays the page's calls to the API signed with the
 * operator's credentials (tenant A's dev keys here), listens on loopback only, and refuses every
 * request that is not from its own page.
 */
let api: TestApi;
let console_: ConsoleServer;

beforeAll(async () => {
  api = await startTestApi(await createTestStack("console"));
  const credentials = loadLocalCredentials();
  const [tenantA] = [...credentials.byAccessKey.values()].filter((c) => c.kind === "tenant");
  if (!tenantA) throw new Error("no dev tenant");
  console_ = await startConsoleServer({
    api: { endpoint: api.url, region: credentials.region, credentials: tenantA },
    assets: { html: "<!doctype html><title>console</title>", script: "console.log(1)", style: "body{}" },
    port: 0,
  });
});
afterAll(async () => {
  await console_.close();
  await api.close();
});

/** A raw request to the console, with exactly the headers given (Host included). */
function call(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }> {
  const { port } = console_.server.address() as AddressInfo;
  return new Promise((done, fail) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers, setHost: false }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
      });
      res.on("end", () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // a page or a script
        }
        done({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
    });
    req.on("error", fail);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe("jobsched console's server", () => {
  const own = () => new URL(console_.url);

  it("listens on 127.0.0.1 only", () => {
    expect((console_.server.address() as AddressInfo).address).toBe("127.0.0.1");
  });

  it("serves its page and relays the page's calls to the API, signed, the ETag passed back", async () => {
    const host = own().host;
    const page = await call("GET", "/", { host });
    expect(page.status).toBe(200);
    expect(page.headers["content-security-policy"]).toContain("default-src 'self'");

    const created = await call(
      "POST",
      "/api/v1/jobs",
      { host, origin: console_.url, "content-type": "application/json" },
      { type: "console-job", cron: "0 9 * * *" },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { jobId } = bodyOf(createJobResponse, created);
    const listed = await call("GET", "/api/v1/jobs?type=console-job", { host });
    expect(bodyOf(jobsPageResponse, listed).jobs.map((j) => j.jobId)).toEqual([jobId]);
    const read = await call("GET", `/api/v1/jobs/${jobId}`, { host, origin: console_.url });
    expect(read.headers.etag).toBe('"1"');
    const stale = await call(
      "PATCH",
      `/api/v1/jobs/${jobId}`,
      { host, origin: console_.url, "if-match": '"7"' },
      { payload: 1 },
    );
    expect(stale.status).toBe(412);
  });

  it("refuses another origin, a change without an origin, another Host, and paths outside the API", async () => {
    const host = own().host;
    const before = await call("GET", "/api/v1/jobs?type=refused", { host });
    for (const [method, headers] of [
      ["GET", { host, origin: "http://evil.example" }],
      ["GET", { host, origin: "https://127.0.0.1:1" }],
      ["POST", { host }],
      ["POST", { host, origin: "null" }],
      ["GET", { host: "evil.example" }],
      ["GET", { host: `rebound.example:${own().port}` }],
    ] as const) {
      const refused = await call(
        method,
        "/api/v1/jobs",
        headers,
        method === "POST" ? { type: "refused", cron: "0 9 * * *" } : undefined,
      );
      expect(refused.status, `${method} ${JSON.stringify(headers)}`).toBe(403);
    }
    expect((await call("GET", "/api/v1/jobs?type=refused", { host })).body).toEqual(before.body);
    expect((await call("GET", "/internal/leases", { host })).status).toBe(404);
  });
});
