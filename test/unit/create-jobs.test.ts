import type { CreateJobsItemResponse, CreateJobsResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { createBatch } from "../../cli/bulk-create";
import { formatInstant } from "../../lambdas/core/instant";
import type { Job } from "../../lambdas/core/job";
import { createJobs } from "../../lambdas/core/use-cases/create-jobs";
import { batchResponse } from "../../lambdas/handlers/http/batch-response";
import { memoryDeps } from "../support/memory-ports";

const NOW = Date.parse("2026-12-02T09:00:00Z");
const caller = { tenant: "t", principal: "p" };
const inAnHour = formatInstant(NOW + 3_600_000);
const good = (i: number) => ({ type: "x", payload: { i }, runAt: inAnHour });

describe("bulk create (createJobs and its answer)", () => {
  it("answers each item in order: created, refused with its field under jobs.<index>, or not an object", async () => {
    const deps = memoryDeps(NOW);
    const answer = batchResponse(
      await createJobs(deps, caller, {
        jobs: [
          good(0),
          { ...good(1), retry: { base: "soon" } },
          "a string",
          good(3),
          { ...good(4), tpye: "x" },
        ],
      }),
    );
    expect(answer).toMatchObject({ created: 2, existing: 0, failed: 3 });
    expect(answer.results.map((r) => [r.index, r.status, r.error?.field])).toEqual([
      [0, 201, undefined],
      [1, 400, "jobs.1.retry.base"],
      [2, 400, "jobs.2"],
      [3, 201, undefined],
      [4, 400, "jobs.4.tpye"],
    ]);
    expect(answer.results[1]?.error?.message).toMatch(/^jobs\.1\.retry\.base: /);
    expect(answer.results[2]?.error?.message).toMatch(/^jobs\.2: /);
    expect(deps.jobs.jobs.size).toBe(2);
  });

  it("one item's store failure is that item's 500 (send it again), never the others'", async () => {
    const deps = memoryDeps(NOW);
    const store = deps.jobs;
    const createJob = store.createJob.bind(store);
    store.createJob = async (job: Job) => {
      if ((job.payload as { i?: number }).i === 1) throw new Error("throttled");
      return createJob(job);
    };
    const answer = batchResponse(await createJobs(deps, caller, { jobs: [good(0), good(1), good(2)] }));
    expect(answer.results.map((r) => r.status)).toEqual([201, 500, 201]);
    expect(answer.results[1]?.error).toEqual({
      code: "InternalError",
      message: "jobs.1: internal error; send this item again",
    });
    expect(answer.results[1]?.error?.message).not.toMatch(/throttled/);
    expect(deps.jobs.jobs.size).toBe(2);
  });

  it("a batch key gives keyless items `<key>#<index>`; an item's own key stands", async () => {
    const deps = memoryDeps(NOW);
    const body = { idempotencyKey: "b1", jobs: [good(0), { ...good(1), idempotencyKey: "own" }] };
    const first = batchResponse(await createJobs(deps, caller, body));
    const again = batchResponse(await createJobs(deps, caller, body));
    expect(first).toMatchObject({ created: 2, existing: 0 });
    expect(again).toMatchObject({ created: 0, existing: 2 });
    expect(again.results.map((r) => r.jobId)).toEqual(first.results.map((r) => r.jobId));
    const keys = [...deps.jobs.jobs.values()].map((j) => j.idempotencyKey).sort();
    expect(keys).toEqual(["b1#0", "own"]);
  });
});

describe("createBatch (the CLI's and bench's bulk sender)", () => {
  const item = (index: number, status: number, retryAfter?: number): CreateJobsItemResponse => ({
    index,
    status,
    ...(status < 300 ? { jobId: `j${index}` } : { error: { code: "x", message: "m" } }),
    ...(retryAfter === undefined ? {} : { retryAfter }),
  });

  it("sends the items a quota refused again after their retryAfter, and answers in the bodies' order", async () => {
    const sent: unknown[][] = [];
    const slept: number[] = [];
    const answers: CreateJobsResponse[] = [
      { created: 1, existing: 0, failed: 2, results: [item(0, 201), item(1, 429, 2), item(2, 429, 1)] },
      { created: 1, existing: 0, failed: 1, results: [item(0, 429, 3), item(1, 201)] },
      { created: 1, existing: 0, failed: 0, results: [item(0, 201)] },
    ];
    const results = await createBatch(
      async (jobs) => {
        sent.push([...jobs]);
        return answers[sent.length - 1] as CreateJobsResponse;
      },
      ["a", "b", "c"],
      async (ms) => {
        slept.push(ms);
      },
    );
    expect(sent).toEqual([["a", "b", "c"], ["b", "c"], ["b"]]);
    expect(slept).toEqual([2_000, 3_000]);
    expect(results.map((r) => [r.index, r.status])).toEqual([
      [0, 201],
      [1, 201],
      [2, 201],
    ]);
  });

  it("lets a 429 stand after ten rounds, and never resends other refusals", async () => {
    let calls = 0;
    const results = await createBatch(
      async (jobs) => {
        calls++;
        return {
          created: 0,
          existing: 0,
          failed: jobs.length,
          results: jobs.map((j, i) => item(i, j === "bad" ? 400 : 429, 1)),
        };
      },
      ["bad", "throttled"],
      async () => undefined,
    );
    expect(calls).toBe(10);
    expect(results.map((r) => r.status)).toEqual([400, 429]);
  });

  it("a quota's refusal carries retryAfter in the batch answer", async () => {
    const deps = memoryDeps(NOW, { tenantCreatesPerSecond: 2 });
    const answer = batchResponse(await createJobs(deps, caller, { jobs: [good(0), good(1), good(2)] }));
    expect(answer.results.map((r) => r.status)).toEqual([201, 201, 429]);
    expect(answer.results[2]?.retryAfter).toBeGreaterThanOrEqual(1);
    expect(answer.results[2]?.error?.field).toBe("jobs.2.quota.createsPerSecond");
  });
});
