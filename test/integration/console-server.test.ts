import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { createJobResponse, jobsPageResponse } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleServer, startConsoleServer } from "../../cli/console/console-server";
import { TOKEN_HEADER } from "../../console/session-names";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack } from "../support/stack";

/**
 * The console's server (issue 19): it relays the page's calls to the API signed with the
 * operator's credentials (tenant A's dev keys here), listens on loopback only, and refuses every
 * request that is not from its own page: other hosts and origins, and (issue 27, finding 9)
 * any relayed call without the session's token that only the printed link hands out.
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

/** The token with its first character changed (to one it surely is not). */
function otherFirstCharacter(token: string): string {
  return `${token.startsWith("x") ? "y" : "x"}${token.slice(1)}`;
}

describe("jobsched console's server", () => {
  const own = () => new URL(console_.url);
  /** The session's token, as the page reads it from the link the CLI prints. */
  const token = () => new URL(console_.openUrl).searchParams.get("token") ?? "";

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
      { host, origin: console_.url, "content-type": "application/json", [TOKEN_HEADER]: token() },
      { type: "console-job", cron: "0 9 * * *" },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { jobId } = bodyOf(createJobResponse, created);
    const listed = await call("GET", "/api/v1/jobs?type=console-job", { host, [TOKEN_HEADER]: token() });
    expect(bodyOf(jobsPageResponse, listed).jobs.map((j) => j.jobId)).toEqual([jobId]);
    const read = await call("GET", `/api/v1/jobs/${jobId}`, {
      host,
      origin: console_.url,
      [TOKEN_HEADER]: token(),
    });
    expect(read.headers.etag).toBe('"1"');
    const stale = await call(
      "PATCH",
      `/api/v1/jobs/${jobId}`,
      { host, origin: console_.url, "if-match": '"7"', [TOKEN_HEADER]: token() },
      { payload: 1 },
    );
    expect(stale.status).toBe(412);
  });

  it("refuses another origin, a change without an origin, another Host, and paths outside the API", async () => {
    const host = own().host;
    const own_ = { [TOKEN_HEADER]: token() };
    const before = await call("GET", "/api/v1/jobs?type=refused", { host, ...own_ });
    for (const [method, headers] of [
      ["GET", { host, origin: "http://evil.example", ...own_ }],
      ["GET", { host, origin: "https://127.0.0.1:1", ...own_ }],
      ["POST", { host, ...own_ }],
      ["POST", { host, origin: "null", ...own_ }],
      ["GET", { host: "evil.example", ...own_ }],
      ["GET", { host: `rebound.example:${own().port}`, ...own_ }],
    ] as const) {
      const refused = await call(
        method,
        "/api/v1/jobs",
        headers,
        method === "POST" ? { type: "refused", cron: "0 9 * * *" } : undefined,
      );
      expect(refused.status, `${method} ${JSON.stringify(headers)}`).toBe(403);
    }
    expect((await call("GET", "/api/v1/jobs?type=refused", { host, ...own_ })).body).toEqual(before.body);
    expect((await call("GET", "/internal/leases", { host, ...own_ })).status).toBe(404);
  });

  it("refuses a call without the session's token, even with its own Host and a forged Origin, relaying nothing", async () => {
    // Another local process can set Host and Origin as it likes; it has not seen the printed link.
    const host = own().host;
    const forged = { host, origin: console_.url, "content-type": "application/json" };
    // Each case's headers are made when it is tried: the plain forgery (no token) goes first.
    const cases: ReadonlyArray<readonly [string, () => Record<string, string>]> = [
      ["no token", () => forged],
      ["an empty token", () => ({ ...forged, [TOKEN_HEADER]: "" })],
      ["a wrong token", () => ({ ...forged, [TOKEN_HEADER]: otherFirstCharacter(token()) })],
      ["a shorter token", () => ({ ...forged, [TOKEN_HEADER]: token().slice(0, -1) })],
      ["the token with more after it", () => ({ ...forged, [TOKEN_HEADER]: `${token()}x` })],
    ];
    for (const [label, headersOf] of cases) {
      const headers = headersOf();
      const secret = await call("POST", "/api/v1/webhook-secret", headers);
      expect(secret.status, label).toBe(403);
      expect(JSON.stringify(secret.body), label).toMatch(/token/);
      const job = await call("POST", "/api/v1/jobs", headers, { type: "forged", cron: "0 9 * * *" });
      expect(job.status, label).toBe(403);
      expect((await call("GET", "/api/v1/jobs?type=forged", headers)).status, label).toBe(403);
    }
    // Nothing reached the API: no secret was made and no job created.
    expect((await api.tenantA("GET", "/api/v1/webhook-secret")).status).toBe(404);
    const jobs = await api.tenantA("GET", "/api/v1/jobs", { query: { type: "forged" } });
    expect(bodyOf(jobsPageResponse, jobs).jobs).toEqual([]);
    // The page itself is public and carries no secret; only the printed link has the token.
    const page = await call("GET", "/", { host });
    expect(page.status).toBe(200);
    expect(String(page.body)).not.toContain(token());
    expect(token()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // With the token, the same call is relayed.
    const made = await call("POST", "/api/v1/webhook-secret", { ...forged, [TOKEN_HEADER]: token() });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
  });
});
