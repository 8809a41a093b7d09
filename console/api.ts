import { TOKEN_HEADER } from "./session-names";
import { sessionToken } from "./session-token";

/**
 * The page's API calls. They go to the console server the page came from, which signs them
 * with the operator's credentials and relays them (cli/console/console-server.ts) if they carry
 * the console session's token (session-token.ts). Answers are typed by the contract; an error
 * answer becomes an ApiError with the API's message.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface Answer<T> {
  readonly body: T;
  readonly etag: string | undefined;
}

export async function api<T>(
  method: string,
  path: string,
  options: { body?: unknown; ifMatch?: string } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = {};
  const token = sessionToken();
  if (token !== undefined) headers[TOKEN_HEADER] = token;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.ifMatch !== undefined) headers["if-match"] = options.ifMatch;
  const response = await fetch(path, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  const body: unknown = text === "" ? undefined : JSON.parse(text);
  if (!response.ok) {
    const error = body as { error?: { message?: string }; message?: string } | undefined;
    throw new ApiError(response.status, error?.error?.message ?? error?.message ?? `HTTP ${response.status}`);
  }
  return { body: body as T, etag: response.headers.get("etag") ?? undefined };
}

/** A query string from the fields that are set. */
export function query(fields: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(fields)) if (value) params.set(key, value);
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}
