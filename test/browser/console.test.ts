import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { createJobResponse, JOB_RECENT_RUNS, leasesResponse, runsPageResponse } from "@jobsched/contract";
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
 * A's dev keys. Jobs are made through the API and looked at, paused, labelled and replayed in
 * the page. Screenshots of every page, light and dark, 1280 and 360 px wide, go to
 * .ci-out/screenshots/ (issue 29).
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
  // HTTPS push targets need the tenant's webhook secret to sign their deliveries.
  await api.tenantA("POST", "/api/v1/webhook-secret");
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
  // Only this run's screenshots: a page renamed or dropped leaves no stale picture behind.
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await consoleServer?.close();
  await api?.close();
});

async function openPage(width = 1100, colorScheme: "light" | "dark" = "light"): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 }, colorScheme });
  page.on("pageerror", (error) => {
    throw error;
  });
  return page;
}

const soon = () => new Date(Date.now() + 1_000).toISOString();

async function createJob(body: Record<string, unknown>): Promise<string> {
  const answer = await api.tenantA("POST", "/api/v1/jobs", { body });
  if (answer.status !== 201)
    throw new Error(`create answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return bodyOf(createJobResponse, answer).jobId;
}

async function leaseOne(type: string) {
  const [lease] = bodyOf(
    leasesResponse,
    await api.worker("POST", "/internal/leases", {
      body: { workerId: "w-browser", types: [type], max: 1, waitSeconds: 10 },
    }),
  );
  if (!lease) throw new Error(`no lease of ${type}`);
  return lease;
}

/** Reports on a lease as a worker would: from its start instant (never before), after a moment's work. */
async function complete(
  lease: { runId: string; fence: number; startAt: string },
  body: Record<string, unknown>,
) {
  await new Promise((resolve) =>
    setTimeout(resolve, Math.max(0, Date.parse(lease.startAt) - Date.now()) + 300),
  );
  await api.worker("POST", `/internal/leases/${lease.runId}/complete`, {
    body: { fence: lease.fence, ...body },
  });
}

/** A one-off job whose run failed once (retryable) and then succeeded: a run of two attempts. */
async function retriedJob(type: string): Promise<{ jobId: string; runKey: string }> {
  const jobId = await createJob({
    type,
    runAt: soon(),
    maxAttempts: 3,
    retry: { base: "PT1S", cap: "PT2S" },
  });
  const first = await leaseOne(type);
  await complete(first, { result: "failed", retryable: true, error: "billing answered 503" });
  const second = await leaseOne(type);
  expect(second).toMatchObject({ runId: first.runId, fence: first.fence + 1 });
  await complete(second, { result: "succeeded" });
  return { jobId, runKey: first.runKey };
}

/**
 * Elements whose content is wider than they are and that hide or scroll it sideways (a clipped
 * id, a table scrolled inside its card): at 360 px there should be none. The run bar clips on
 * purpose (its pieces are placed inside it), and a 1 px element is hidden but for screen readers.
 */
const CLIPPED_SIDEWAYS = `[...document.querySelectorAll("body *")]
  .filter((e) => !e.classList.contains("track") && e.clientWidth > 1) // not the bar, nor what is hidden for screens
  .filter((e) => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(e).overflowX))
  .filter((e) => e.scrollWidth > e.clientWidth + 1)
  .map((e) => e.tagName.toLowerCase() + (e.className ? "." + e.className : ""))`;

/** The page's body background, as a brightness from 0 (black) to 255 (white). */
async function backgroundBrightness(page: Page): Promise<number> {
  const colour = await page.evaluate<string>("getComputedStyle(document.body).backgroundColor");
  const [r = 0, g = 0, b = 0] = (colour.match(/\d+/g) ?? []).map(Number);
  return (r + g + b) / 3;
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

    await page.setViewportSize({ width: 1100, height: 800 });
    await page.getByLabel("Status").selectOption("paused");
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(0);
    await page.getByLabel("Status").selectOption("active");
    await expect.poll(() => page.getByRole("link", { name: jobId }).count(), PATIENCE).toBe(1);
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
    await page.close();
  });

  it("shows where a push job's runs go and how: its target and invocation", async () => {
    const https = await createJob({
      target: { kind: "https", url: "https://hooks.example.com/invoices" },
      runAt: soon(),
    });
    const lambda = await createJob({
      target: {
        kind: "lambda",
        functionArn: "arn:aws:lambda:us-east-1:000000000000:function:send-invoice",
        roleArn: "arn:aws:iam::000000000000:role/jobsched-target-browser",
        invocation: "async",
      },
      cron: "0 9 * * *",
    });
    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/jobs/${https}`);
    const facts = page.locator("#job-target-facts");
    await expect.poll(() => facts.count(), PATIENCE).toBe(1);
    expect(await facts.textContent()).toMatch(/HTTPS webhook.*https:\/\/hooks\.example\.com\/invoices.*POST/);

    await page.goto(`${consoleServer.openUrl}#/jobs/${lambda}`);
    await expect.poll(() => facts.textContent(), PATIENCE).toContain("function:send-invoice");
    expect(await facts.textContent()).toMatch(
      /role\/jobsched-target-browser.*asynchronous \(InvocationType Event\)/,
    );
    await page.close();
  });

  it("draws a retried run's two attempts on the run timeline, with their fences and the failure's error", async () => {
    const { jobId, runKey } = await retriedJob("browser-retried");
    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/jobs/${jobId}`);
    const attempts = page.locator(`li.run[data-run-key="${runKey}"] li.attempt`);
    await expect.poll(() => attempts.count(), PATIENCE).toBe(2);
    expect(
      await attempts.evaluateAll((items) => items.map((item) => item.getAttribute("data-outcome"))),
    ).toEqual(["failed", "succeeded"]);
    expect(await attempts.nth(0).textContent()).toMatch(
      /^Attempt 1 \(fence 1\): started \d\d:\d\d:\d\d\.\d{3}Z \(\+.*\), failed after .*: billing answered 503$/,
    );
    expect(await attempts.nth(1).textContent()).toMatch(
      /^Attempt 2 \(fence 2\): started \d\d:\d\d:\d\d\.\d{3}Z \(\+.*\), succeeded after /,
    );
    // The bar: waiting (if it started late at all), then the failed attempt, then the successful one.
    const segments = page.locator(`li.run[data-run-key="${runKey}"] .segment`);
    const kinds = await segments.evaluateAll((items) => items.map((item) => item.className));
    expect(kinds.filter((k) => !k.includes("segment-wait"))).toEqual([
      "segment segment-failed",
      "segment segment-succeeded",
    ]);
    await page.close();
  });

  it("shows the job's newest runs from its own answer, and older ones page by page when asked", async () => {
    const jobId = await createJob({ type: "browser-older", cron: "* * * * *" });
    await api.tenantA("POST", `/api/v1/jobs/${jobId}/backfill`, {
      body: {
        from: new Date(Date.now() - 45 * 60_000).toISOString(),
        to: new Date(Date.now() - 2 * 60_000).toISOString(),
      },
    });
    const page = await openPage();
    await page.goto(`${consoleServer.openUrl}#/jobs/${jobId}`);
    const runs = page.locator("li.run");
    await expect.poll(() => runs.count(), PATIENCE).toBe(JOB_RECENT_RUNS);
    const older = page.getByRole("button", { name: "Older runs" });
    while ((await older.count()) > 0 && (await older.isEnabled())) {
      const before = await runs.count();
      await older.click();
      await expect.poll(() => runs.count(), PATIENCE).toBeGreaterThan(before);
      if ((await runs.count()) > 200) throw new Error("paging does not end");
    }
    // Every run the API lists, each once, newest first.
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const answer = bodyOf(
        runsPageResponse,
        await api.tenantA(
          "GET",
          `/api/v1/jobs/${jobId}/runs${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`,
        ),
      );
      listed.push(...answer.runs.map((run) => run.runKey));
      cursor = answer.cursor;
    } while (cursor !== undefined);
    expect(listed.length).toBeGreaterThan(40);
    const shown = await runs.evaluateAll((items) => items.map((item) => item.getAttribute("data-run-key")));
    expect(shown).toEqual(listed);
    await page.close();
  });

  it("edits a job's labels in place, and names a bad key before sending it", async () => {
    const jobId = await createJob({ type: "browser-labels", cron: "0 9 * * *", labels: { team: "billing" } });
    const labelsOf = async () =>
      ((await api.tenantA("GET", `/api/v1/jobs/${jobId}`)).body as { labels: Record<string, string> }).labels;
    const page = await openPage(360);
    await page.goto(`${consoleServer.openUrl}#/jobs/${jobId}`);
    await expect
      .poll(() => page.getByRole("button", { name: "Remove label team" }).count(), PATIENCE)
      .toBe(1);

    await page.getByLabel("Label key").fill("env");
    await page.getByLabel("Label value").fill("prod");
    await page.getByRole("button", { name: "Set label" }).click();
    await expect.poll(labelsOf, PATIENCE).toEqual({ team: "billing", env: "prod" });
    await expect.poll(() => page.getByRole("button", { name: "Remove label env" }).count(), PATIENCE).toBe(1);

    await page.getByRole("button", { name: "Remove label team" }).click();
    await expect.poll(labelsOf, PATIENCE).toEqual({ env: "prod" });

    await page.getByLabel("Label key").fill("-bad");
    await page.getByLabel("Label value").fill("x");
    await page.getByRole("button", { name: "Set label" }).click();
    await expect.poll(() => page.getByRole("alert").first().textContent(), PATIENCE).toMatch(/^Key: 1-64/);
    expect(await labelsOf()).toEqual({ env: "prod" });
    await page.close();
  });

  it("shows every page light and dark, at 1280 and 360 px, without sideways scrolling (screenshots)", async () => {
    const cron = await createJob({
      type: "shot-cron",
      cron: "*/15 * * * *",
      timeZone: "Europe/London",
      labels: { team: "billing", env: "prod" },
    });
    const push = await createJob({
      target: { kind: "https", url: "https://hooks.example.com/reminders" },
      cron: "0 9 * * *",
    });
    const retried = await retriedJob("shot-retried");
    const dead = await createJob({ type: "shot-dead", runAt: soon() });
    await complete(await leaseOne("shot-dead"), {
      result: "failed",
      retryable: false,
      error: "no such customer",
    });
    // A run waiting to retry (an hour's backoff), and one whose lease a worker holds now.
    const retrying = await createJob({
      type: "shot-retrying",
      runAt: soon(),
      retry: { base: "PT1H", cap: "PT2H" },
    });
    await complete(await leaseOne("shot-retrying"), {
      result: "failed",
      retryable: true,
      error: "rate limited",
    });
    const running = await createJob({ type: "shot-running", runAt: soon(), leaseSeconds: 600 });
    await leaseOne("shot-running");

    const has =
      (selector: string, count = 1) =>
      async (page: Page) =>
        (await page.locator(selector).count()) >= count;
    const pages: { name: string; hash: string; ready: (page: Page) => Promise<boolean> }[] = [
      { name: "jobs", hash: "#/jobs", ready: has(`a[href="#/jobs/${cron}"]`) },
      { name: "job", hash: `#/jobs/${cron}`, ready: has("h2:has-text('Next runs') + ul > li", 5) },
      { name: "job-push", hash: `#/jobs/${push}`, ready: has("#job-target-facts") },
      { name: "job-retried", hash: `#/jobs/${retried.jobId}`, ready: has("li.attempt", 2) },
      {
        name: "job-dead-lettered",
        hash: `#/jobs/${dead}`,
        ready: has("li.attempt[data-outcome='dead-lettered']"),
      },
      { name: "job-retrying", hash: `#/jobs/${retrying}`, ready: has(".run .marker") },
      { name: "job-running", hash: `#/jobs/${running}`, ready: has(".segment-running") },
      { name: "dead-letters", hash: "#/dead-letters", ready: has("button[aria-label^='Replay ']") },
      { name: "lateness", hash: "#/lateness", ready: has("canvas") },
    ];
    for (const scheme of ["light", "dark"] as const) {
      for (const width of [1280, 360]) {
        const page = await openPage(width, scheme);
        for (const { name, hash, ready } of pages) {
          await page.goto(`${consoleServer.openUrl}${hash}`);
          await expect
            .poll(() => ready(page), { ...PATIENCE, message: `${name}, ${scheme}, ${width} px` })
            .toBe(true);
          const overflow = await page.evaluate<number>(
            "document.documentElement.scrollWidth - window.innerWidth",
          );
          expect(overflow, `${name} scrolls sideways at ${width} px (${scheme})`).toBeLessThanOrEqual(0);
          if (width === 360)
            expect(await page.evaluate<string[]>(CLIPPED_SIDEWAYS), `${name}, ${scheme}`).toEqual([]);
          const brightness = await backgroundBrightness(page);
          if (scheme === "dark") expect(brightness, name).toBeLessThan(60);
          else expect(brightness, name).toBeGreaterThan(200);
          await page.screenshot({ path: resolve(SHOTS, `${name}-${scheme}-${width}.png`), fullPage: true });
        }
        await page.close();
      }
    }
  });
});
