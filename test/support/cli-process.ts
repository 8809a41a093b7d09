import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { loadLocalCredentials } from "../../local/local-credentials";

const run = promisify(execFile);
/** The CLI's bundle (scripts/build-cli.mjs), as a user runs it. */
export const CLI = resolve(import.meta.dirname, "../../bin/jobsched.mjs");

/** Runs `jobsched <args>` against `endpoint`, signing with the first dev tenant's credentials. */
export function runCli(endpoint: string, ...args: string[]) {
  const tenant = loadLocalCredentials().first("tenant");
  return run(process.execPath, [CLI, ...args], {
    env: {
      ...process.env,
      AWS_ACCESS_KEY_ID: tenant.accessKeyId,
      AWS_SECRET_ACCESS_KEY: tenant.secretAccessKey,
      AWS_PROFILE: "",
      JOBSCHED_ENDPOINT: endpoint,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
}
