/**
 * The console session's token (decision 0031). `jobsched console` prints the address to open
 * with the token in its query (`/?token=...`); the page keeps it in this origin's local storage
 * (so a reload, or a job opened in another tab, still has it) and takes it out of the address
 * bar and the history entry. Every API call sends it (api.ts); the console server refuses a
 * call without it, so a local process that did not see the printed link cannot use the
 * operator's credentials. Each start makes a new token: a kept one from an earlier start is
 * refused, and the page says to open the new link.
 */
import { TOKEN_PARAMETER } from "./session-names";

const STORAGE_KEY = "jobsched-console-token";

function storage(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined; // storage turned off: the token lives as long as the page
  }
}

function takeTokenFromAddress(): string | undefined {
  const url = new URL(window.location.href);
  const token = url.searchParams.get(TOKEN_PARAMETER);
  if (token === null) return undefined;
  url.searchParams.delete(TOKEN_PARAMETER);
  window.history.replaceState(window.history.state, "", url.toString());
  return token;
}

const fromAddress = takeTokenFromAddress();
if (fromAddress !== undefined) storage()?.setItem(STORAGE_KEY, fromAddress);
const token = fromAddress ?? storage()?.getItem(STORAGE_KEY) ?? undefined;

/** The token this page was opened with, if any. */
export function sessionToken(): string | undefined {
  return token;
}
