import { fromNodeProviderChain } from "@aws-sdk/credential-providers";
import { createClient, type JobschedClient } from "@jobsched/client";
import type { Command } from "commander";
import { type Progress, type ProgressOptions, type ProgressStream, startProgress } from "./progress";

/** What every command shares: the global options, output, and the API client. */
export interface GlobalOptions {
  endpoint: string;
  region: string;
  profile?: string;
  json?: boolean;
}

export type Out = {
  log: (text: string) => void;
  error: (text: string) => void;
  /** Where progress is drawn (default standard error, when it is a terminal); tests give their own. */
  progress?: ProgressStream;
};

/** An error the CLI reports as `jobsched: <message>` with exit code 1. */
export class CliError extends Error {}

export interface CliContext {
  readonly out: Out;
  readonly globals: () => GlobalOptions;
  /**
   * The API, signed with the caller's credentials (@jobsched/client: every request the CLI
   * makes goes through it). An error answer throws its JobschedError, which main() prints as
   * `HTTP <status>: <message>`.
   */
  client(): JobschedClient;
  /** Prints the answer as JSON (--json) or as the command's human form. */
  print<T>(body: T, human: (body: T) => string): void;
  credentials(): ReturnType<typeof fromNodeProviderChain>;
  /** A progress display on standard error: drawn on a terminal only, never with --json (progress.ts). */
  progress(options: Pick<ProgressOptions, "unit" | "total">): Progress;
}

export function cliContext(program: Command, out: Out): CliContext {
  const globals = () => program.opts<GlobalOptions>();
  const credentials = () => {
    const { profile } = globals();
    return fromNodeProviderChain(profile ? { profile } : {});
  };
  let client: JobschedClient | undefined;
  return {
    out,
    globals,
    credentials,
    client() {
      const g = globals();
      client ??= createClient({ endpoint: g.endpoint, region: g.region, credentials: credentials() });
      return client;
    },
    progress(options) {
      return startProgress({
        ...options,
        quiet: globals().json === true,
        ...(out.progress ? { stream: out.progress } : {}),
      });
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
