import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSignedFetch } from "@jobsched/worker";
import { afterAll, describe, expect, it } from "vitest";
import { loadLocalCredentials } from "../../local/local-credentials";
import { type RunningRuntime, startLocalRuntime } from "../../local/spawn-runtime";

/**
 * The local runtime killed with SIGKILL (no chance to flush or clean up) and started again on
 * the same data folder: every accepted job is still there, and a one-off job whose time passed
 * while it was down runs once. Its queued message died with the SQS emulator, so this also
 * proves the repair pass.
 */
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

const credentials = loadLocalCredentials();

/** A signed call as tenant A. */
async function call(base: string, method: string, path: string, body?: unknown) {
  const signed = createSignedFetch({
    endpoint: base,
    region: credentials.region,
    credentials: credentials.first("tenant"),
  });
  const response = await signed(method, path, { body });
  return { status: response.status, body: response.body as Record<string, unknown> };
}

describe("the local runtime across a SIGKILL", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "jobsched-restart-"));
  let runtime: RunningRuntime | undefined;

  afterAll(async () => {
    await runtime?.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("keeps every accepted job and runs a missed one-off job once after the restart", {
    timeout: 90_000,
  }, async () => {
    // Prepare: one job due in 10 s (fired and enqueued at once; its message shows up 5 s early,
    // after the kill), one due in an hour.
    runtime = await startLocalRuntime(dataDir);
    const create = (runAt: number, payload: unknown) =>
      call(runtime?.url ?? "", "POST", "/api/v1/jobs", {
        type: "example.log",
        payload,
        runAt: new Date(runAt).toISOString(),
      });
    const dueSoon = await create(Date.now() + 10_000, { which: "soon" });
    const dueLater = await create(Date.now() + 3_600_000, { which: "later" });
    expect([dueSoon.status, dueLater.status]).toEqual([201, 201]);

    // Act: kill it hard before the first job is due, stay down past its time, start again.
    expect(await runtime.kill("SIGKILL")).toBeNull();
    await sleep(12_000);
    runtime = await startLocalRuntime(dataDir);

    // Assess: both jobs are there; the missed one ran exactly once.
    const soonPath = `/api/v1/jobs/${dueSoon.body.jobId}`;
    let soon = await call(runtime.url, "GET", soonPath);
    for (let i = 0; i < 40 && soon.body.status !== "completed"; i++) {
      await sleep(500);
      soon = await call(runtime.url, "GET", soonPath);
    }
    expect(soon.body).toMatchObject({
      status: "completed",
      runs: [{ status: "succeeded", attempt: 1 }],
    });
    const later = await call(runtime.url, "GET", `/api/v1/jobs/${dueLater.body.jobId}`);
    expect(later.body).toMatchObject({ status: "active", payload: { which: "later" }, runs: [] });
    const executions = runtime.output().match(new RegExp(`ran ${String(dueSoon.body.jobId)}@`, "g")) ?? [];
    expect(executions).toHaveLength(1);
  });
});
