/**
 * How a request reaches the API. The client's methods build the request and read the answer;
 * a transport sends it: signed with SigV4 from Node (signed-fetch.ts, what `createClient` uses),
 * or as it is from a page whose server signs it (`fetchTransport`, the console's).
 */
export interface JsonResponse {
  readonly status: number;
  /** The parsed JSON body; the text when it is not JSON; undefined when empty. */
  readonly body: unknown;
  readonly headers?: Headers;
}

export interface TransportRequest {
  body?: unknown;
  query?: Record<string, string | undefined>;
  /** Extra request headers (If-Match, say); a signing transport signs them with the rest. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export type Transport = (method: string, path: string, init?: TransportRequest) => Promise<JsonResponse>;

/** `path` (with or without its leading /) under `base`, with the query's set values. */
export function urlOf(base: string, path: string, query: Record<string, string | undefined> = {}): URL {
  const url = new URL(path.replace(/^\//, ""), base.endsWith("/") ? base : `${base}/`);
  for (const [name, value] of Object.entries(query))
    if (value !== undefined) url.searchParams.set(name, value);
  return url;
}

/** An answer's body: JSON parsed, else the text, undefined when empty. */
export async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface FetchTransportOptions {
  /** Where the API is: an absolute URL, or a page's own origin (`location.origin`). */
  readonly baseUrl: string;
  /** Headers every request carries (the console's session token, say). */
  readonly headers?: () => Record<string, string>;
  readonly fetch?: typeof fetch;
}

/** Requests sent unsigned with fetch(): for a page whose own server signs and relays them. */
export function fetchTransport(options: FetchTransportOptions): Transport {
  const send = options.fetch ?? ((input, init) => fetch(input, init));
  return async (method, path, init = {}) => {
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const response = await send(urlOf(options.baseUrl, path, init.query), {
      method,
      headers: {
        ...options.headers?.(),
        ...init.headers,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body }),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    return { status: response.status, body: await bodyOf(response), headers: response.headers };
  };
}
