import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createSignedFetch, type SignedFetchOptions } from "@jobsched/client";
import { TOKEN_HEADER, TOKEN_PARAMETER } from "../../console/session-names";

/**
 * The server behind `jobsched console` (issue 19): it serves the console's page on loopback and
 * relays the page's API calls to a jobsched endpoint, signed with the operator's own AWS
 * credentials, so the page needs no login of its own and works the same against `npm start`
 * and a deployed stack.
 *
 * Anything that could reach it other than the operator's own page is refused: it listens on
 * 127.0.0.1 only; a request whose Host is not this server's is refused (a DNS-rebinding page
 * would send its own name); a request with an Origin other than this server's is refused, and a
 * request that changes something (anything but GET and HEAD) must carry this server's Origin,
 * as browsers send it on such requests. Those checks stop other web pages, not another local
 * process, which can send any Host and Origin it likes: so every relayed request must also
 * carry this session's token (TOKEN_HEADER), a random value made at start and handed out only
 * in the URL the CLI prints for the operator to open (`openUrl`); the served page and script
 * hold no secret, and a request without the token is refused before anything is relayed
 * (decision 0031). Only /api/* is relayed, and only the headers the API reads (If-Match); the
 * answer's ETag and Retry-After come back.
 */
export interface ConsoleAssets {
  /** The page, and the script and style sheet it loads from /app.js and /app.css. */
  readonly html: string;
  readonly script: string;
  readonly style: string;
}

export interface ConsoleServerOptions {
  readonly api: Omit<SignedFetchOptions, "throttleRetries">;
  readonly assets: ConsoleAssets;
  /** 0 picks a free port. */
  readonly port: number;
}

export interface ConsoleServer {
  /** The server's own address, http://127.0.0.1:PORT (the page, without the session's token). */
  readonly url: string;
  /**
   * The address the operator opens: the page with this session's token in its query, which the
   * page keeps (in its origin's local storage) and then takes out of the address bar.
   */
  readonly openUrl: string;
  readonly server: Server;
  close(): Promise<void>;
}

/** The largest request body relayed: far above every API request's own limit. */
const MAX_BODY_BYTES = 1_048_576;
const LOOPBACK = "127.0.0.1";

export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  // A 429 goes back to the page, which shows it; the page, not the relay, decides to retry.
  const signedFetch = createSignedFetch({ ...options.api, throttleRetries: 0 });
  // 256 random bits, new on every start: a token from an earlier session is worth nothing.
  const token = randomBytes(32).toString("base64url");
  const tokenDigest = digestOf(token);
  let ownHosts = new Set<string>();
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      send(response, 502, { message: `the console could not reach the API: ${String(error)}` });
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const host = (request.headers.host ?? "").toLowerCase();
    if (!ownHosts.has(host))
      return send(response, 403, { message: `host ${host || "(none)"} is not this console` });
    const origin = request.headers.origin;
    const method = request.method ?? "GET";
    const safe = method === "GET" || method === "HEAD";
    if (origin !== undefined ? !ownHosts.has(originHost(origin)) : !safe) {
      return send(response, 403, { message: `origin ${origin ?? "(none)"} may not use this console` });
    }
    const url = new URL(request.url ?? "/", `http://${host}`);
    if (url.pathname === "/" && safe)
      return sendText(response, "text/html; charset=utf-8", options.assets.html);
    if (url.pathname === "/app.js" && safe) {
      return sendText(response, "text/javascript; charset=utf-8", options.assets.script);
    }
    if (url.pathname === "/app.css" && safe)
      return sendText(response, "text/css; charset=utf-8", options.assets.style);
    if (!url.pathname.startsWith("/api/")) return send(response, 404, { message: "not found" });
    if (!tokenMatches(request.headers[TOKEN_HEADER], tokenDigest)) {
      return send(response, 403, {
        message: "this request lacks the console session's token: open the link `jobsched console` printed",
      });
    }

    const text = await readBody(request);
    if (text === undefined) return send(response, 413, { message: `body over ${MAX_BODY_BYTES} bytes` });
    let body: unknown;
    if (text !== "") {
      try {
        body = JSON.parse(text);
      } catch {
        return send(response, 400, { message: "the body is not JSON" });
      }
    }
    const ifMatch = request.headers["if-match"];
    const answer = await signedFetch(method, url.pathname, {
      query: Object.fromEntries(url.searchParams),
      ...(body === undefined ? {} : { body }),
      ...(typeof ifMatch === "string" ? { headers: { "if-match": ifMatch } } : {}),
    });
    // The ETag for updates, Retry-After for the page's client to wait out a 429.
    const passed: Record<string, string> = {};
    for (const name of ["etag", "retry-after"]) {
      const value = answer.headers?.get(name);
      if (value) passed[name] = value;
    }
    send(response, answer.status, answer.body ?? null, passed);
  }

  await new Promise<void>((listening) => server.listen(options.port, LOOPBACK, listening));
  const { port } = server.address() as AddressInfo;
  ownHosts = new Set([`${LOOPBACK}:${port}`, `localhost:${port}`]);
  const url = `http://${LOOPBACK}:${port}`;
  return {
    url,
    openUrl: `${url}/?${new URLSearchParams({ [TOKEN_PARAMETER]: token })}`,
    server,
    close: () =>
      new Promise((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}

function digestOf(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/**
 * Whether a request's token header is this session's. Compared in constant time, as digests
 * so that the two sides are always the same length (timingSafeEqual needs it) and the time
 * taken says nothing about the token's length either.
 */
function tokenMatches(header: string | string[] | undefined, expected: Buffer): boolean {
  if (typeof header !== "string" || header === "") return false;
  return timingSafeEqual(digestOf(header), expected);
}

function originHost(origin: string): string {
  try {
    const url = new URL(origin);
    return url.protocol === "http:" ? url.host.toLowerCase() : "";
  } catch {
    return "";
  }
}

async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function send(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers });
  response.end(JSON.stringify(body));
}

function sendText(response: ServerResponse, type: string, text: string): void {
  response.writeHead(200, {
    "content-type": type,
    "cache-control": "no-store",
    // The page and its script come from here only; its API calls go back to here only.
    "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    // The address the page was opened at carries the session's token: never send it onwards.
    "referrer-policy": "no-referrer",
  });
  response.end(text);
}
