import { fetchTransport, JobschedClient } from "@jobsched/client/core";
import { TOKEN_HEADER } from "./session-names";
import { sessionToken } from "./session-token";

/**
 * The page's API client (@jobsched/client, without its Node signing). Its requests go to the
 * console server the page came from, which signs them with the operator's credentials and
 * relays them (cli/console/console-server.ts) if they carry the console session's token
 * (session-token.ts). Answers are typed by the contract; an error answer throws the client's
 * JobschedError with the API's message. A 429 is retried by the client, after its Retry-After.
 */
export const client = new JobschedClient({
  transport: fetchTransport({
    baseUrl: globalThis.location?.origin ?? "http://127.0.0.1",
    headers: (): Record<string, string> => {
      const token = sessionToken();
      return token === undefined ? {} : { [TOKEN_HEADER]: token };
    },
  }),
});

/** What a failed call shows: the API's message. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
