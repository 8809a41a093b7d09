import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { createTestStack } from "../support/stack";

/** The jobsched CLI against the local stack, signing with credentials from the environment. */
const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, "../../bin/jobsched.mjs");
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi(await createTestStack("cli"));
});
afterAll(() => api.close());

async function cli(...args: string[]) {
  const tenant = loadLocalCredentials().first("tenant");
  return run(process.execPath, [CLI, ...args], {
    env: {
      ...process.env,
      AWS_ACCESS_KEY_ID: tenant.accessKeyId,
      AWS_SECRET_ACCESS_KEY: tenant.secretAccessKey,
      AWS_PROFILE: "",
      JOBSCHED_ENDPOINT: api.url,
    },
  });
}

describe("jobsched jobs ...", () => {
  it("creates, shows, lists, pauses, resumes and cancels a job", async () => {
    const created = JSON.parse(
      (
        await cli(
          "jobs",
          "create",
          "--type",
          "cli-job",
          "--cron",
          "0 9 * * MON-FRI",
          "--tz",
          "Europe/London",
          "--json",
        )
      ).stdout,
    ) as { jobId: string };
    expect(created.jobId).toMatch(/^j_/);

    const shown = await cli("jobs", "get", created.jobId);
    expect(shown.stdout).toContain(`job        ${created.jobId}`);
    expect(shown.stdout).toContain('cron "0 9 * * MON-FRI" Europe/London');

    const listed = JSON.parse((await cli("jobs", "list", "--type", "cli-job", "--json")).stdout) as {
      jobs: Array<{ jobId: string }>;
    };
    expect(listed.jobs.map((j) => j.jobId)).toEqual([created.jobId]);

    for (const [action, status] of [
      ["pause", "paused"],
      ["resume", "active"],
      ["cancel", "cancelled"],
    ]) {
      const answer = JSON.parse((await cli("jobs", action as string, created.jobId, "--json")).stdout) as {
        status: string;
      };
      expect(answer.status).toBe(status);
    }
    const runs = JSON.parse((await cli("jobs", "runs", created.jobId, "--json")).stdout) as {
      runs: unknown[];
    };
    expect(runs.runs).toEqual([]);
  });

  it("exits 1 with the API's message when the API refuses", async () => {
    const failure = await cli("jobs", "get", "j_00000000000000000000").catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure).toMatchObject({ code: 1, stderr: expect.stringContaining("HTTP 404") });
  });
});
