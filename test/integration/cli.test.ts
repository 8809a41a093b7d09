import { execFile, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { runCli } from "../support/cli-process";
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
  return runCli(api.url, ...args);
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

describe("jobsched jobs create --file", () => {
  it("creates a JSONL file's jobs 100 at a time, a result per line; the same file again creates none", async () => {
    const runAt = new Date(Math.ceil((Date.now() + 3_600_000) / 1000) * 1000).toISOString();
    const lines = Array.from({ length: 150 }, (_, i) =>
      i === 20
        ? "{ not json"
        : JSON.stringify({ type: "cli-bulk", payload: { i }, runAt: i === 120 ? "soon" : runAt }),
    );
    const folder = mkdtempSync(join(tmpdir(), "jobsched-bulk-"));
    const file = join(folder, "jobs.jsonl");
    writeFileSync(file, `${lines.join("\n")}\n`);
    type Answer = {
      results: Array<{
        line: number;
        status: number;
        jobId?: string;
        error?: { message: string; field?: string };
      }>;
      failed: number;
    };
    const send = async () => {
      const failure = await cli(
        "jobs",
        "create",
        "--file",
        file,
        "--idempotency-key",
        "cli-bulk-1",
        "--json",
      ).catch((e: { code: number; stdout: string; stderr: string }) => e);
      expect(failure).toMatchObject({ code: 1, stderr: expect.stringContaining("2 of 150 lines failed") });
      return JSON.parse((failure as { stdout: string }).stdout) as Answer;
    };
    const first = await send();
    expect(first.failed).toBe(2);
    expect(first.results.map((r) => r.line)).toEqual(lines.map((_, i) => i + 1));
    expect(first.results[20]).toMatchObject({ line: 21, status: 400, error: { message: "not valid JSON" } });
    expect(first.results[120]).toMatchObject({
      line: 121,
      status: 400,
      error: { field: "runAt", message: expect.stringMatching(/^runAt: /) },
    });
    expect(first.results.filter((r) => r.status === 201)).toHaveLength(148);

    const again = await send();
    expect(again.results.filter((r) => r.status === 200)).toHaveLength(148);
    const listed = JSON.parse(
      (await cli("jobs", "list", "--type", "cli-bulk", "--limit", "100", "--json")).stdout,
    ) as {
      jobs: unknown[];
      cursor?: string;
    };
    expect(listed.jobs).toHaveLength(100);
    expect(listed.cursor).toBeDefined();
  });

  it("refuses --file with definition options", async () => {
    const failure = await cli("jobs", "create", "--file", "-", "--type", "x").catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure).toMatchObject({ code: 1, stderr: expect.stringContaining("leave out --type") });
  });
});

describe("jobsched webhook-secret and push jobs", () => {
  it("shows the secret once, then creates push jobs with --target-*; refuses a target without its role", async () => {
    const rotated = await cli("webhook-secret", "rotate");
    expect(rotated.stdout).toMatch(/^whsec_[A-Za-z0-9+/=]+\n\nShown this once/);
    const shown = await cli("webhook-secret", "show");
    expect(shown.stdout).toMatch(/^created \d{4}-/);
    expect(shown.stdout).not.toContain("whsec_");

    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = JSON.parse(
      (await cli("jobs", "create", "--target-https", "http://127.0.0.1:9/hook", "--run-at", runAt, "--json"))
        .stdout,
    ) as { jobId: string };
    const job = JSON.parse((await cli("jobs", "get", created.jobId, "--json")).stdout) as {
      type: string;
      target: unknown;
    };
    expect(job).toMatchObject({ type: "@https", target: { kind: "https", url: "http://127.0.0.1:9/hook" } });

    const roleless = await cli(
      "jobs",
      "create",
      "--target-lambda",
      "arn:aws:lambda:us-east-1:000000000000:function:f",
      "--run-at",
      runAt,
    ).catch((e: { code: number; stderr: string }) => e);
    expect(roleless).toMatchObject({ code: 1, stderr: expect.stringContaining("need --role") });
    const neither = await cli("jobs", "create", "--run-at", runAt).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(neither).toMatchObject({ code: 1, stderr: expect.stringContaining("give --type") });
  });

  it("creates a Lambda target invoked asynchronously with --target-invocation async (sync by default)", async () => {
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const lambda = ["--target-lambda", "arn:aws:lambda:us-east-1:000000000000:function:f"];
    const role = [
      "--role",
      "arn:aws:iam::000000000000:role/jobsched-target-cli",
      "--run-at",
      runAt,
      "--json",
    ];
    const invocationOf = async (...extra: string[]) => {
      const { jobId } = JSON.parse((await cli("jobs", "create", ...lambda, ...role, ...extra)).stdout) as {
        jobId: string;
      };
      const job = JSON.parse((await cli("jobs", "get", jobId, "--json")).stdout) as {
        target: { invocation?: string };
      };
      return job.target.invocation;
    };
    expect(await invocationOf("--target-invocation", "async")).toBe("async");
    expect(await invocationOf()).toBe("sync");
  });
});

describe("jobsched worker and jobsched dlq", () => {
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

  it("runs a command per run (payload on stdin, run key in the environment); exit 2 dead-letters, replay runs it again", {
    timeout: 40_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "jobsched-cli-worker-"));
    const worker = loadLocalCredentials().first("worker");
    const child = spawn(
      process.execPath,
      [
        CLI,
        "worker",
        "--types",
        "cli-exec",
        "--exec",
        `cat > "${dir}/$JOBSCHED_FENCE-$JOBSCHED_ATTEMPT.json"; echo "$JOBSCHED_RUN_KEY" >> "${dir}/keys"; grep -q fail "${dir}/$JOBSCHED_FENCE-$JOBSCHED_ATTEMPT.json" && [ "$JOBSCHED_FENCE" = 1 ] && exit 2; exit 0`,
      ],
      {
        env: {
          ...process.env,
          AWS_ACCESS_KEY_ID: worker.accessKeyId,
          AWS_SECRET_ACCESS_KEY: worker.secretAccessKey,
          AWS_PROFILE: "",
          JOBSCHED_ENDPOINT: api.url,
        },
        stdio: "ignore",
      },
    );
    try {
      const runAt = new Date(Date.now() + 1_000).toISOString();
      const created = JSON.parse(
        (
          await cli(
            "jobs",
            "create",
            "--type",
            "cli-exec",
            "--run-at",
            runAt,
            "--payload",
            '{"fail": true}',
            "--json",
          )
        ).stdout,
      ) as { jobId: string };
      let letters: Array<{ runId: string; error: string }> = [];
      for (let i = 0; i < 60 && letters.length === 0; i++) {
        await sleep(250);
        letters = (JSON.parse((await cli("dlq", "list", "--json")).stdout) as { deadLetters: typeof letters })
          .deadLetters;
      }
      expect(letters).toEqual([expect.objectContaining({ error: expect.stringContaining("exited with 2") })]);
      expect(JSON.parse(readFileSync(join(dir, "1-1.json"), "utf8"))).toEqual({ fail: true });
      expect(readFileSync(join(dir, "keys"), "utf8")).toContain(`${created.jobId}@`);

      const replayed = await cli("dlq", "replay", letters[0]?.runId ?? "");
      expect(replayed.stdout).toContain("replay 1");
      let status = "";
      for (let i = 0; i < 60 && status !== "succeeded"; i++) {
        await sleep(250);
        const job = JSON.parse((await cli("jobs", "get", created.jobId, "--json")).stdout) as {
          runs: Array<{ status: string }>;
        };
        status = job.runs[0]?.status ?? "";
      }
      expect(status).toBe("succeeded"); // fence 2 this time: the command exits 0
      const usage = await cli("dlq", "replay").catch((e: { code: number; stderr: string }) => e);
      expect(usage).toMatchObject({ code: 1, stderr: expect.stringContaining("give a run id, or --all") });
    } finally {
      child.kill("SIGTERM");
    }
  });
});

describe("the built CLI", () => {
  it("runs from a folder with no node_modules: the bundle carries its dependencies", async () => {
    const alone = mkdtempSync(join(tmpdir(), "jobsched-cli-alone-"));
    copyFileSync(resolve(import.meta.dirname, "../../dist/jobsched.mjs"), join(alone, "jobsched.mjs"));
    const { stdout } = await run(
      process.execPath,
      [
        join(alone, "jobsched.mjs"),
        "preview",
        "--cron",
        "30 2 * * *",
        "--tz",
        "Europe/Paris",
        "--count",
        "1",
        "--from",
        "2026-03-29T00:00:00Z",
      ],
      { cwd: alone, env: { PATH: process.env.PATH ?? "" } },
    );
    expect(stdout).toContain("2026-03-29T01:00:00Z");
    expect(stdout).toContain("moved by DST");
  });
});
