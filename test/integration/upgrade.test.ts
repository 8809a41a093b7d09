import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { JobResponse } from "@jobsched/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LAYOUT_2026_12 } from "../fixtures/layout-2026-12";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { runCli } from "../support/cli-process";
import { createTestStack } from "../support/stack";

/**
 * The upgrade path across a layout change (issue 28, docs/deploy.md): jobs and runs written into
 * a table of the layout deployments had before (test/fixtures/layout-2026-12.ts), exported with
 * `jobsched export`, imported with `jobsched import jobs` into a stack of today's layout. Every
 * active job keeps its next run, every paused job its state and reason; a second import creates
 * nothing. The CLI's bundle is what runs, as a user runs it.
 */
const _run = promisify(execFile);
const _CLI = resolve(import.meta.dirname, "../../bin/jobsched.mjs");
let source: TestApi;
let target: TestApi;

beforeAll(async () => {
  source = await startTestApi(await createTestStack("upgrade-from", { table: LAYOUT_2026_12 }));
  target = await startTestApi(await createTestStack("upgrade-to"));
});
afterAll(async () => {
  await source.close();
  await target.close();
});

function cli(api: TestApi, ...args: string[]) {
  return runCli(api.url, ...args);
}

interface ImportAnswer {
  failed: number;
  results: Array<{ line: number; jobId?: string; result: string; newJobId?: string; reason?: string }>;
}

async function create(body: Record<string, unknown>): Promise<string> {
  const answer = await source.tenantA("POST", "/api/v1/jobs", { body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return (answer.body as { jobId: string }).jobId;
}

async function job(api: TestApi, jobId: string): Promise<JobResponse> {
  const answer = await api.tenantA("GET", `/api/v1/jobs/${jobId}`);
  expect(answer.status).toBe(200);
  return answer.body as JobResponse;
}

describe("upgrade: export from the old layout, import into today's", () => {
  it("keeps every active job's next run and every paused job's state; a second import creates none", async () => {
    const inTwoHours = new Date(Math.ceil((Date.now() + 7_200_000) / 1000) * 1000).toISOString();
    const ids = {
      cron: await create({
        type: "upgrade.report",
        cron: "0 9 * * MON-FRI",
        timeZone: "Europe/London",
        labels: { team: "billing" },
        payload: { report: "daily" },
      }),
      // From an hour ahead: no firing passes while the test runs (no sweep moves these jobs on).
      jittered: await create({
        type: "upgrade.poll",
        interval: { every: "15m" },
        jitter: "PT5M",
        startAt: new Date(Math.ceil((Date.now() + 3_600_000) / 60_000) * 60_000).toISOString(),
      }),
      oneOff: await create({
        type: "upgrade.reminder",
        runAt: inTwoHours,
        idempotencyKey: "upgrade-reminder-1",
        payload: { to: "ops" },
        maxAttempts: 7,
      }),
      // Every minute: its next firing is always within the lookahead, so a create that made it
      // active, even for a moment, would fire a run.
      paused: await create({ type: "upgrade.report", cron: "* * * * *", overlapPolicy: "skip" }),
      cancelled: await create({ type: "upgrade.poll", interval: { every: "1h" } }),
      // Fired by the API at once: its run is stored (and queued) in the old stack.
      underWay: await create({ type: "upgrade.reminder", runAt: new Date(Date.now() + 3_000).toISOString() }),
    };
    expect(
      (await source.tenantA("POST", `/api/v1/jobs/${ids.paused}/pause`, { body: { reason: "holiday" } }))
        .status,
    ).toBe(200);
    expect((await source.tenantA("DELETE", `/api/v1/jobs/${ids.cancelled}`)).status).toBe(200);
    const before = new Map<string, JobResponse>();
    for (const id of Object.values(ids)) before.set(id, await job(source, id));
    expect(before.get(ids.underWay)?.nextRunAt).toBeUndefined();

    const exported = await cli(source, "export");
    const lines = exported.stdout.trim().split("\n");
    expect(lines).toHaveLength(6);
    expect(exported.stderr).toContain("exported 6 jobs");
    const file = join(mkdtempSync(join(tmpdir(), "jobsched-upgrade-")), "jobs.jsonl");
    writeFileSync(file, exported.stdout);

    const first = JSON.parse((await cli(target, "--json", "import", "jobs", file)).stdout) as ImportAnswer;
    expect(first.failed).toBe(0);
    const byOldId = new Map(first.results.map((r) => [r.jobId, r]));
    expect(byOldId.get(ids.cancelled)?.result).toBe("skipped");
    expect(byOldId.get(ids.underWay)?.result).toBe("skipped");
    for (const id of [ids.cron, ids.jittered, ids.oneOff, ids.paused]) {
      const result = byOldId.get(id);
      expect(result?.result, id).toBe("created");
      const was = before.get(id) as JobResponse;
      const now = await job(target, String(result?.newJobId));
      expect(now.status).toBe(was.status);
      // An active job keeps its next run; a paused one its state (its next run is computed on
      // resume, from its missed-runs policy).
      if (was.status === "active") expect(now.nextRunAt).toBe(was.nextRunAt);
      expect(now.pauseReason).toBe(was.pauseReason);
      expect(now.labels).toEqual(was.labels);
      expect(now.payload).toEqual(was.payload);
      for (const field of [
        "type",
        "runAt",
        "cron",
        "timeZone",
        "dstPolicy",
        "interval",
        "jitter",
        "startAt",
        "endAt",
        "missedRuns",
        "overlapPolicy",
        "delivery",
        "maxAttempts",
        "maxLateness",
        "retry",
        "leaseSeconds",
      ] as const)
        expect(now[field], field).toEqual(was[field]);
      expect(now.importedFrom).toBe(id);
    }
    // An update draws the jitter from the same id: the next run stays.
    const jittered = String(byOldId.get(ids.jittered)?.newJobId);
    const patched = await target.tenantA("PATCH", `/api/v1/jobs/${jittered}`, {
      body: { labels: { moved: "yes" } },
    });
    expect(patched.status).toBe(200);
    expect((await job(target, jittered)).nextRunAt).toBe(before.get(ids.jittered)?.nextRunAt);
    // A job with a key of its own keeps its id: the id is the tenant's and the key's digest.
    expect(byOldId.get(ids.oneOff)?.newJobId).toBe(ids.oneOff);
    expect(byOldId.get(ids.paused)?.newJobId).not.toBe(ids.paused);
    const pausedRuns = await target.tenantA("GET", `/api/v1/jobs/${byOldId.get(ids.paused)?.newJobId}/runs`);
    expect((pausedRuns.body as { runs: unknown[] }).runs).toEqual([]);

    const second = JSON.parse((await cli(target, "--json", "import", "jobs", file)).stdout) as ImportAnswer;
    expect(second.failed).toBe(0);
    expect(second.results.filter((r) => r.result === "created")).toEqual([]);
    expect(second.results.filter((r) => r.result === "existing")).toHaveLength(4);
    const listed = await target.tenantA("GET", "/api/v1/jobs", { query: { limit: "100" } });
    expect((listed.body as { jobs: unknown[] }).jobs).toHaveLength(4);
  });

  it("resumes an export from the cursor standard error printed after a page, with no gap and no repeat", async () => {
    // A second page: 100 more jobs (one bulk create) beside the 6 above.
    const runAt = new Date(Math.ceil((Date.now() + 7_200_000) / 1000) * 1000).toISOString();
    const more = await source.tenantA("POST", "/api/v1/jobs/batch", {
      body: {
        jobs: Array.from({ length: 100 }, (_, i) => ({ type: "upgrade.page", runAt, payload: { i } })),
      },
    });
    expect((more.body as { created: number }).created).toBe(100);
    const all = await cli(source, "export");
    const lines = all.stdout.trim().split("\n");
    expect(lines).toHaveLength(106);
    const hint = /to go on from here: (jobsched export --cursor (\S+))/.exec(all.stderr);
    expect(hint?.[1]).toBeDefined();
    const rest = (await cli(source, "export", "--cursor", String(hint?.[2]))).stdout.trim().split("\n");
    expect(rest).toHaveLength(6);
    expect([...lines.slice(0, 100), ...rest]).toEqual(lines);
  });
});
