import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { SHARDS_PER_GROUP, shardOf } from "../../lambdas/core/keys";
import { createApiHandler } from "../../lambdas/handlers/api";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import { httpEvent, invoke, workerEvent } from "../support/http-event";
import { OffsetClock } from "../support/offset-clock";
import { createTestStack, type TestStack } from "../support/stack";
import { tickSweep } from "../support/tick-sweeps";

/**
 * The thin path end to end: the real handlers, the real adapters and AWS SDK clients, dynalite
 * and fauxqs. Nothing is mocked.
 */
const WORKER = { workerId: "w-1", types: ["send-invoice"], max: 10, waitSeconds: 5 };

describe("a one-off job, end to end on the emulators", () => {
  const clock = new OffsetClock();
  let stack: TestStack;
  let api: ReturnType<typeof createApiHandler>;
  let internal: ReturnType<typeof createInternalHandler>;

  beforeAll(async () => {
    stack = await createTestStack("e2e", { clock });
    api = createApiHandler(stack.deps);
    internal = createInternalHandler(stack.deps);
  });

  const getJob = (jobId: string) =>
    invoke(api, httpEvent("GET /api/v1/jobs/{jobId}", { pathParameters: { jobId } }));

  it("is swept, delivered at its second, leased with a fence, completed and reported succeeded", async () => {
    // Prepare: a job 20 minutes out: its run is made at create and sent by the sweep that
    // reaches it, which writes no job (decision 0058; one due within 15 minutes has its run sent
    // at create: decision 0048, the next test).
    clock.offsetMs = 0;
    const runAt = new Date(Math.ceil((Date.now() + 20 * 60_000) / 1000) * 1000);
    const created = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", {
        body: { type: "send-invoice", payload: { invoiceId: 8812 }, runAt: runAt.toISOString() },
      }),
    );
    expect(created.status).toBe(201);
    const jobId = String(created.body.jobId);
    expect(created.body.nextRunAt).toBe(runAt.toISOString().replace(".000", ""));

    expect((await getJob(jobId)).body).toMatchObject({ nextRunAt: created.body.nextRunAt, runs: [] });
    const stored = await stack.deps.jobs.getJob(jobId);
    expect(stored).toMatchObject({ madeAheadAt: runAt.getTime(), lastFiringAt: runAt.getTime() });

    // Act: move the scheduler's clock to 2 s before the job is due and sweep its shard group.
    clock.offsetMs = runAt.getTime() - 2_000 - Date.now();
    const group = Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);
    const sweep = await tickSweep(stack.deps, group);
    expect(sweep).toMatchObject({ runsCreated: 1, failedShards: 0 });
    expect(await stack.deps.jobs.getJob(jobId)).toEqual(stored); // not written
    // The tick recorded the slice it handed out (decision 0059); the sweep wrote nothing.
    expect((await stack.deps.jobs.getAheadLedger()).get(group)?.through).toBeGreaterThan(runAt.getTime());
    expect((await tickSweep(stack.deps, group)).runsCreated).toBe(0); // sent once

    const leased = await invoke(internal, workerEvent("POST /internal/leases", { body: WORKER }));
    const leases = leased.body as unknown as Array<Record<string, unknown>>;
    expect(leased.status).toBe(200);
    expect(leases).toHaveLength(1);
    const lease = leases[0] ?? {};
    expect(lease).toMatchObject({ jobId, attempt: 1, fence: 1, payload: { invoiceId: 8812 } });
    expect(lease.runKey).toBe(`${jobId}@${created.body.nextRunAt}`);
    // Handed over ahead, to be started on its second, never before: startAt is the due instant.
    expect(clock.now()).toBeLessThan(runAt.getTime());
    expect(lease.startAt).toBe(created.body.nextRunAt);

    const done = await invoke(
      internal,
      workerEvent("POST /internal/leases/{runId}/complete", {
        pathParameters: { runId: String(lease.runId) },
        body: { fence: lease.fence, result: "succeeded" },
      }),
    );
    expect(done.status).toBe(200);

    // Assess
    const job = await getJob(jobId);
    expect(job.body).toMatchObject({
      status: "completed",
      runs: [{ status: "succeeded", attempt: 1, fence: 1 }],
    });
  });

  it("runs a job due in five seconds on its second with no tick in between, never early", async () => {
    // No sweep runs in this test: the API fires the near-term job itself.
    clock.offsetMs = 0;
    const runAt = new Date(Math.ceil((Date.now() + 5_000) / 1000) * 1000).toISOString();
    const created = await invoke(
      api,
      httpEvent("POST /api/v1/jobs", { body: { type: "send-invoice", runAt } }),
    );
    expect(created.status).toBe(201);
    let leases: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 3 && leases.length === 0; i++) {
      leases = (await invoke(internal, workerEvent("POST /internal/leases", { body: WORKER })))
        .body as unknown as Array<Record<string, unknown>>;
    }
    expect(leases).toEqual([expect.objectContaining({ jobId: created.body.jobId, fence: 1 })]);
    const job = await invoke(
      api,
      httpEvent("GET /api/v1/jobs/{jobId}", { pathParameters: { jobId: String(created.body.jobId) } }),
    );
    const [run] = job.body.runs as Array<{ startedAt: string }>;
    expect(Date.parse(run?.startedAt ?? "")).toBeGreaterThanOrEqual(Date.parse(runAt));
  });

  it("makes a run 10 minutes out at create: stored pending with its job moved on, out of the due index", async () => {
    // Decision 0048; the test before shows such a run leased without a sweep.
    clock.offsetMs = 0;
    const runAt = new Date(Math.ceil((Date.now() + 10 * 60_000) / 1000) * 1000).toISOString();
    const created = await invoke(api, httpEvent("POST /api/v1/jobs", { body: { type: "later", runAt } }));
    expect(created.status).toBe(201);
    const jobId = String(created.body.jobId);
    const { Item } = await stack.db.send(
      new GetCommand({ TableName: stack.config.tableName, Key: { pk: `JOB#${jobId}`, sk: "JOB" } }),
    );
    expect(Item).toMatchObject({ status: "active", lastFiringAt: Date.parse(runAt) });
    expect(Item).not.toHaveProperty("dueKey");
    expect(Item).not.toHaveProperty("nextRunAt");
    // As any one-off whose run is made: no next run, the run pending in its history.
    const job = await getJob(jobId);
    expect(job.body).not.toHaveProperty("nextRunAt");
    expect(job.body).toMatchObject({ runs: [{ status: "pending", scheduledFor: created.body.nextRunAt }] });
  });

  it("answers a repeated completion (same fence and result) as the first, and refuses the other result", async () => {
    clock.offsetMs = 0;
    const runAt = new Date(Date.now() + 1_000).toISOString();
    await invoke(api, httpEvent("POST /api/v1/jobs", { body: { type: "send-invoice", runAt } }));
    const leased = await invoke(internal, workerEvent("POST /internal/leases", { body: WORKER }));
    const [lease] = leased.body as unknown as Array<{ runId: string; fence: number }>;
    if (!lease) throw new Error("no lease");
    const complete = (result: string) =>
      invoke(
        internal,
        workerEvent("POST /internal/leases/{runId}/complete", {
          pathParameters: { runId: lease.runId },
          body: { fence: lease.fence, result },
        }),
      );
    expect((await complete("succeeded")).status).toBe(200);
    const repeat = await complete("succeeded");
    expect([repeat.status, repeat.body]).toEqual([200, { runId: lease.runId, status: "succeeded" }]);
    expect((await complete("failed")).status).toBe(409);
  });
});
