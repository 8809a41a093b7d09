import { mkdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { createJobResponse, leasesResponse, runsPageResponse } from "@jobsched/contract";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleServer, startConsoleServer } from "../../cli/console/console-server";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { createTestStack } from "../support/stack";

/**
 * The web console in a real browser (issue 19): Debian's Chromium driven by playwright-core,
 * the console server relaying to the real handlers on dynalite and fauxqs, signed with tenant
 * A's dev keys. Jobs are made through the API and looked at, paused and replayed in the page.
 * Screenshots of each page go to .ci-out/screenshots/.
 */
const ROOT = resolve(import.meta.dirname, "../..");
/**
 * How long a check waits for the page: expect.poll's default is one second, less than a page
 * load and its API calls may take on a busy 2-core machine. (A run failed once on a check that
 * did not wait at all: the next runs arrive by a second call, after the job is shown.)
 */
const PATIENCE = { timeout: 15_000, interval: 100 };
const SHOTS = resolve(ROOT, ".ci-out/screenshots");
let api: TestApi;
let consoleServer: ConsoleServer;
let browser: Browser;

beforeAll(async () => {
  api = await startTestApi(await createTestStack("console-browser"));
  const credentials = loadLocalCredentials();
  const [tenantA] = [...credentials.byAccessKey.values()].filter((c) => c.kind === "tenant");
  if (!tenantA) throw new Error("no dev tenant");
  // The page as `npm test` built it (scripts/build-cli.mjs runs before vitest).
  const built = (name: string) => readFileSync(resolve(ROOT, "dist/console", name), "utf8");
  consoleServer = await startConsoleServer({
    api: { endpoint: api.url, region: credentials.region, credentials: tenantA },
    assets: { html: built("index.html"), script: built("app.js"), style: built("app.css") },
    port: 0,
  });
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    // As root, with no sandbox; no background traffic to hosts this machine cannot reach.
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await consoleServer?.close();
  await api?.close();
});

async function openPage(width = 1100): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 } });
  page.on("pageerror", (error) => {
    throw error;
  });
  return page;
}

describe("the console in Chromium", () => {
  it("lists jobs made through the API, usable at 360 px wide", async () => {
    const created = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "browser-cron", cron: "0 9 * * *", timeZone: "Europe/London" },
    });
    const { jobId } = bodyOf(createJobResponse, created);
    const page = await openPage(360);
    // The link `jobsched console` prints: the page keeps its token and takes it out of the address.
    await page.goto(consoleServer.openUrl);
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(1);
    expect(page.url()).toBe(`${consoleServer.url}/`);
    // Evaluated in the page (a string: this file is compiled without the DOM's types).
    const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: resolve(SHOTS, "jobs-360.png"), fullPage: true });

    await page.setViewportSize({ width: 1100, height: 800 });
    await page.getByLabel("Status").selectOption("paused");
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(0);
    await page.getByLabel("Status").selectOption("active");
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(1);
    await page.screenshot({ path: resolve(SHOTS, "jobs.png"), fullPage: true });
    await page.close();
  });

  it("keeps the session's token over a reload; opened without the printed link, it says so", async () => {
    const created = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "browser-token", cron: "0 9 * * *" },
    });
    const { jobId } = bodyOf(createJobResponse, created);
    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/jobs`);
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(1);
    await page.reload();
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(1);
    await page.close();

    // Another browser profile (a new context) at the bare address has no token.
    const stranger = await openPage();
    await stranger.goto(consoleServer.url);
    await expect
      .poll(() => stranger.getByRole("alert").first().textContent(), PATIENCE)
      .toMatch(/open the link `jobsched console` printed/);
    expect(await stranger.getByRole("link", { name: jobId }).count()).toBe(0);
    await stranger.close();
  });

  it("shows a job with its next runs, and pauses it from the page", async () => {
    const created = await api.tenantA("POST", "/api/v1/jobs", {
      body: {
        type: "browser-pause",
        cron: "30 1 * * *",
        timeZone: "Europe/London",
        dstPolicy: "every-occurrence",
      },
    });
    const { jobId } = bodyOf(createJobResponse, created);
    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/jobs/${jobId}`);
    await expect.poll(() => page.locator("#job-status").textContent(), PATIENCE).toBe("active");
    // The next runs come from a second call (the preview), after the job itself is shown.
    await expect.poll(() => page.getByRole("heading", { name: "Next runs" }).count(), PATIENCE).toBe(1);
    expect(await page.locator("h2:has-text('Next runs') + ul > li").count()).toBe(5);
    await page.getByRole("button", { name: "Pause" }).click();
    await expect.poll(() => page.locator("#job-status").textContent(), PATIENCE).toBe("paused");
    const job = await api.tenantA("GET", `/api/v1/jobs/${jobId}`);
    expect((job.body as { status: string }).status).toBe("paused");
    await page.screenshot({ path: resolve(SHOTS, "job.png"), fullPage: true });
    await page.close();
  });

  it("replays a failed run from the dead-letter page", async () => {
    const created = await api.tenantA("POST", "/api/v1/jobs", {
      body: { type: "browser-fail", runAt: new Date(Date.now() + 1_000).toISOString() },
    });
    const { jobId } = bodyOf(createJobResponse, created);
    const [lease] = bodyOf(
      leasesResponse,
      await api.worker("POST", "/internal/leases", {
        body: { workerId: "w-browser", types: ["browser-fail"], max: 1, waitSeconds: 10 },
      }),
    );
    if (!lease) throw new Error("no lease");
    await api.worker("POST", `/internal/leases/${lease.runId}/complete`, {
      body: { fence: lease.fence, result: "failed", retryable: false, error: "invoice service said no" },
    });

    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/dead-letters`);
    const replay = page.getByRole("button", { name: `Replay ${lease.runKey}` });
    await expect.poll(() => replay.count(), PATIENCE).toBe(1);
    await page.screenshot({ path: resolve(SHOTS, "dead-letters.png"), fullPage: true });
    await replay.click();
    await expect.poll(() => page.getByRole("status").first().textContent(), PATIENCE).toContain("replayed");
    const runs = bodyOf(runsPageResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}/runs`));
    expect(runs.runs[0]).toMatchObject({ runKey: lease.runKey, status: "pending" });
    await page.close();
  });

  it("charts start lateness from the run history", async () => {
    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/lateness`);
    await expect
      .poll(() => page.getByRole("status").first().textContent(), PATIENCE)
      .toMatch(/minute\(s\); latest p50/);
    expect(await page.locator("canvas").count()).toBeGreaterThan(0);
    await page.screenshot({ path: resolve(SHOTS, "lateness.png"), fullPage: true });
    await page.close();
  });
});
