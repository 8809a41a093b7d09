import { fromNodeProviderChain } from "@aws-sdk/credential-providers";
import { createSignedFetch } from "@jobsched/worker";
import type { Command } from "commander";

/** What every command shares: the global options, output, and the signed API call. */
export interface GlobalOptions {
  endpoint: string;
  region: string;
  profile?: string;
  json?: boolean;
}

export type Out = { log: (text: string) => void; error: (text: string) => void };

/** An error the CLI reports as `jobsched: <message>` with exit code 1. */
export class CliError extends Error {}

export interface CliContext {
  readonly out: Out;
  readonly globals: () => GlobalOptions;
  /** A signed call; a 4xx or 5xx answer becomes a CliError naming the API's message. */
  call<T>(
    method: string,
    path: string,
    init?: { body?: unknown; query?: Record<string, string | undefined>; headers?: Record<string, string> },
  ): Promise<T>;
  /** Prints the answer as JSON (--json) or as the command's human form. */
  print<T>(body: T, human: (body: T) => string): void;
  credentials(): ReturnType<typeof fromNodeProviderChain>;
  /** A signed call that answers every status (the caller reads it), for commands that need it. */
  signedFetch(): ReturnType<typeof createSignedFetch>;
}

export function cliContext(program: Command, out: Out): CliContext {
  const globals = () => program.opts<GlobalOptions>();
  const credentials = () => {
    const { profile } = globals();
    return fromNodeProviderChain(profile ? { profile } : {});
  };
  const signedFetch = () => {
    const g = globals();
    return createSignedFetch({ endpoint: g.endpoint, region: g.region, credentials: credentials() });
  };
  return {
    out,
    globals,
    credentials,
    signedFetch,
    async call<T>(
      method: string,
      path: string,
      init: {
        body?: unknown;
        query?: Record<string, string | undefined>;
        headers?: Record<string, string>;
      } = {},
    ) {
      const response = await signedFetch()(method, path, init);
      if (response.status >= 400) {
        const body = response.body as { error?: { message?: string }; message?: string } | undefined;
        throw new CliError(
          `HTTP ${response.status}: ${body?.error?.message ?? body?.message ?? JSON.stringify(body)}`,
        );
      }
      return response.body as T;
    },
    print(body, human) {
      out.log(globals().json ? JSON.stringify(body, null, 2) : human(body));
    },
  };
}

/** A page's "more" line: the cursor to pass for the next page. */
export function moreLine(cursor: string | undefined): string {
  return cursor ? `\nmore: --cursor ${cursor}` : "";
}
