import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import type { CreateJobResponse, ErrorResponse } from "@jobsched/contract";
import { afterAll, describe, expect, it } from "vitest";
import { RECOUNT_EVERY_MS } from "../../lambdas/adapters/dynamo/dynamo-tenant-quotas";
import { scheduledRun } from "../../lambdas/core/lifecycle/creation";
import { RunStatus } from "../../lambdas/core/run";
import type { SchedulerSettings } from "../../lambdas/definitions/settings";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { OffsetClock } from "../support/offset-clock";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Per-tenant quotas through the local gateway, the real handlers and dynalite (issue 15): a
 * create past a quota is 429 with Retry-After, names the quota, and stores nothing; another
 * tenant is not affected.
 */
/** A create's answer, or an error one, as the contract shapes them. */
type Body = Partial<CreateJobResponse & ErrorResponse>;

const opened: TestApi[] = [];
afterAll(() => Promise.all(opened.map((api) => api.close())));

async function quotaStack(name: string, settings: Partial<SchedulerSettings>) {
  const clock = new OffsetClock();
  const stack = await createTestStack(name, { clock, settings });
  const api = await startTestApi(stack, { throttleRetries: 0 });
  opened.push(api);
  return { clock, stack, api };
}

const later = () => new Date(Date.now() + 3_600_000).toISOString();
const create = (api: TestApi, type = "q", client: "tenantA" | "tenantB" = "tenantA") =>
  api[client]("POST", "/api/v1/jobs", { body: { type, runAt: later() } });

async function jobCount(stack: TestStack): Promise<number> {
  const { Items = [] } = await stack.db.send(
    new ScanCommand({
      TableName: stack.config.tableName,
      FilterExpression: "sk = :job",
      ExpressionAttributeValues: { ":job": "JOB" },
    }),
  );
  return Items.length;
}

describe("tenant quotas", () => {
  it("refuses creates past the per-second rate with 429 and Retry-After: 1, storing nothing", async () => {
    const { clock, stack, api } = await quotaStack("quota-rate", {
      tenantCreatesPerSecond: 5,
      tenantMaxActiveJobs: 0,
    });
    // Hold the scheduler's clock in one second (mid-second, so the calls cannot straddle two).
    clock.advance(500 - (clock.now() % 1000));
    const frozen = clock.now();
    clock.now = () => frozen;
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await create(api));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201, 201, 429, 429, 429]);
    const refused = answers[5];
    if (!refused) throw new Error("no sixth answer");
    expect(refused.headers?.get("retry-after")).toBe("1");
    expect((refused.body as Body).error).toMatchObject({
      code: "QuotaExceeded",
      field: "quota.createsPerSecond",
    });
    expect(await jobCount(stack)).toBe(5);
    // Another tenant has its own quota.
    expect((await create(api, "q", "tenantB")).status).toBe(201);
    // The next second, tenant A may create again.
    clock.now = () => frozen + 1_000;
    expect((await create(api)).status).toBe(201);
  }, 30_000);

  it("refuses a job past the active-jobs quota, and admits again once a recount sees jobs ended", async () => {
    const { clock, stack, api } = await quotaStack("quota-active", {
      tenantCreatesPerSecond: 0,
      tenantMaxActiveJobs: 3,
    });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await create(api);
      expect(answer.status).toBe(201);
      ids.push(String((answer.body as Body).jobId));
    }
    const refused = await create(api);
    expect(refused.status).toBe(429);
    expect(refused.headers?.get("retry-after")).toBe("60");
    expect((refused.body as Body).error).toMatchObject({ code: "QuotaExceeded", field: "quota.activeJobs" });
    expect(await jobCount(stack)).toBe(3);

    // A cancelled job no longer counts, once the count is recounted (at most every 10 minutes).
    expect((await api.tenantA("DELETE", `/api/v1/jobs/${ids[0]}`)).status).toBe(200);
    clock.advance(RECOUNT_EVERY_MS);
    expect((await create(api)).status).toBe(201);
    expect((await create(api)).status).toBe(429);
  }, 30_000);

  it("counts a one-off its run ended as ended, though no write marked it (decision 0057)", async () => {
    const { clock, stack, api } = await quotaStack("quota-one-off-end", {
      tenantCreatesPerSecond: 0,
      tenantMaxActiveJobs: 2,
    });
    const soon = new Date(clock.now() + 60_000).toISOString(); // its run made at create (0048)
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const answer = await api.tenantA("POST", "/api/v1/jobs", { body: { type: "q", runAt: soon } });
      expect(answer.status).toBe(201);
      ids.push(String((answer.body as Body).jobId));
    }
    expect((await create(api)).status).toBe(429);
    // The first one's run ran and succeeded: its job is stored active, shown completed.
    const first = await stack.deps.jobs.getJob(String(ids[0]));
    if (!first?.lastFiringAt) throw new Error("the one-off's run was not made at create");
    // At its second: a run is handed out at most EARLY_HOLD_MS before it (one-off-end.ts).
    clock.advance(first.lastFiringAt - clock.now());
    await stack.deps.runs.createRun({
      ...scheduledRun(first, first.lastFiringAt, clock.now(), true),
      status: RunStatus.Succeeded,
      finishedAt: clock.now(),
    });
    expect(first.status).toBe("active");
    expect((await api.tenantA("GET", `/api/v1/jobs/${ids[0]}`)).body).toMatchObject({ status: "completed" });
    clock.advance(RECOUNT_EVERY_MS);
    expect((await create(api)).status).toBe(201);
    expect((await create(api)).status).toBe(429);
  }, 30_000);

  it("refuses a new job type past the types quota, while the tenant's known types still work", async () => {
    const { stack, api } = await quotaStack("quota-types", { tenantMaxJobTypes: 2 });
    expect((await create(api, "one")).status).toBe(201);
    expect((await create(api, "two")).status).toBe(201);
    const refused = await create(api, "three");
    expect(refused.status).toBe(429);
    expect((refused.body as Body).error).toMatchObject({ code: "QuotaExceeded", field: "type" });
    expect((await create(api, "one")).status).toBe(201);
    expect(await jobCount(stack)).toBe(3);
  }, 30_000);

  it("still answers a repeated idempotent create that was stored, at the quota", async () => {
    const { api } = await quotaStack("quota-idem", { tenantCreatesPerSecond: 0, tenantMaxActiveJobs: 1 });
    const body = { type: "q", runAt: later(), idempotencyKey: "once" };
    const first = await api.tenantA("POST", "/api/v1/jobs", { body });
    expect(first.status).toBe(201);
    const again = await api.tenantA("POST", "/api/v1/jobs", { body });
    expect(again.status).toBe(200);
    expect((again.body as Body).jobId).toBe((first.body as Body).jobId);
  }, 30_000);
});
