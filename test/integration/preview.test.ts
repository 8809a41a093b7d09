import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { previewResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { createApiHandler } from "../../lambdas/handlers/api";
import { httpEvent, invoke } from "../support/http-event";
import { createTestStack } from "../support/stack";

const run = promisify(execFile);
const CLI = resolve(import.meta.dirname, "../../bin/jobsched.mjs");

describe("schedule preview: the CLI (offline) and the HTTP API agree", () => {
  it("shows 01:30 Europe/London moved by DST on 2026-03-29, the same over HTTP", async () => {
    // Act: the CLI, as a user would run it.
    const { stdout } = await run(process.execPath, [
      CLI,
      "preview",
      "--cron",
      "30 1 * * *",
      "--tz",
      "Europe/London",
      "--from",
      "2026-03-28T00:00:00Z",
      "--count",
      "3",
      "--json",
    ]);
    const cli = previewResponse.parse(JSON.parse(stdout));

    // Assess: the instants worked out by hand from the UK's rules.
    expect(cli.runs.map((r) => r.at)).toEqual([
      "2026-03-28T01:30:00Z",
      "2026-03-29T01:00:00Z",
      "2026-03-30T00:30:00Z",
    ]);
    expect(cli.runs.map((r) => r.dst)).toEqual([undefined, "moved", undefined]);

    // And the HTTP API answers exactly the same document.
    const stack = await createTestStack("preview");
    const api = createApiHandler(stack.deps);
    const event = httpEvent("GET /api/v1/schedules/preview");
    event.queryStringParameters = {
      cron: "30 1 * * *",
      timeZone: "Europe/London",
      from: "2026-03-28T00:00:00Z",
      count: "3",
    };
    const http = await invoke(api, event);
    expect(http.status).toBe(200);
    expect(http.body).toEqual(cli);
  });

  it("answers bad input with a 400 over HTTP and exit code 2 from the CLI, naming the field", async () => {
    const stack = await createTestStack("preview-bad");
    const api = createApiHandler(stack.deps);
    const event = httpEvent("GET /api/v1/schedules/preview");
    event.queryStringParameters = { cron: "0 9 * * *", timeZone: "Nowhere/Special" };
    const http = await invoke(api, event);
    expect(http.status).toBe(400);
    expect(http.body.error?.field).toBe("timeZone");

    const cli = await run(process.execPath, [
      CLI,
      "preview",
      "--cron",
      "0 9 * * *",
      "--tz",
      "Nowhere/Special",
    ]).catch((error: { code: number; stderr: string }) => error);
    expect(cli).toMatchObject({ code: 2, stderr: expect.stringContaining("timeZone") });
  });
});

describe("jobsched preview with Vixie cron's Sunday", () => {
  it('runs --cron "0 0 * * SUN,7" --tz UTC weekly on Sundays', async () => {
    const { stdout } = await run(process.execPath, [
      CLI,
      "preview",
      "--cron",
      "0 0 * * SUN,7",
      "--tz",
      "UTC",
      "--from",
      "2026-12-01T00:00:00Z",
      "--count",
      "4",
      "--json",
    ]);
    const runs = previewResponse.parse(JSON.parse(stdout)).runs.map((r) => r.at);
    expect(runs).toEqual([
      "2026-12-06T00:00:00Z",
      "2026-12-13T00:00:00Z",
      "2026-12-20T00:00:00Z",
      "2026-12-27T00:00:00Z",
    ]);
    for (const at of runs) expect(new Date(at).getUTCDay()).toBe(0);
  });
});
