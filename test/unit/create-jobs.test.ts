import type { CreateJobsItemResponse, CreateJobsResponse } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { createBatch } from "../../cli/bulk-create";
import { formatInstant } from "../../lambdas/core/instant";
import type { Job } from "../../lambdas/core/job";
import { batchItemKey, createJobs } from "../../lambdas/core/use-cases/create-jobs";
import {
  batchResponse,
  MAX_ITEM_FIELD_CHARS,
  MAX_ITEM_MESSAGE_CHARS,
} from "../../lambdas/handlers/http/batch-response";
import { memoryDeps } from "../support/memory-ports";

const NOW = Date.parse("2026-12-02T09:00:00Z");
const caller = { tenant: "t", principal: "p" };
const inAnHour = formatInstant(NOW + 3_600_000);
const good = (i: number) => ({ type: "x", payload: { i }, runAt: inAnHour });
/** A bulk create by `caller` on `deps`, answered as the API answers it. */
const bulk = async (deps: ReturnType<typeof memoryDeps>, body: unknown) =>
  batchResponse(await createJobs(deps, caller, body));

describe("bulk create (createJobs and its answer)", () => {
  it("answers each item in order: created, refused with its field under jobs.<index>, or not an object", async () => {
    const deps = memoryDeps(NOW);
    const answer = await bulk(deps, {
      jobs: [
        good(0),
        { ...good(1), retry: { base: "soon" } },
        "a string",
        good(3),
        { ...good(4), tpye: "x" },
      ],
    });
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
    const answer = await bulk(deps, { jobs: [good(0), good(1), good(2)] });
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
    const first = await bulk(deps, body);
    const again = await bulk(deps, body);
    expect(first).toMatchObject({ created: 2, existing: 0 });
    expect(again).toMatchObject({ created: 0, existing: 2 });
    expect(again.results.map((r) => r.jobId)).toEqual(first.results.map((r) => r.jobId));
    const keys = [...deps.jobs.jobs.values()].map((j) => j.idempotencyKey).sort();
    expect(keys).toEqual([batchItemKey("b1", 0), "own"].sort());
    // Not a key a client would choose: a single create keyed `b1#0` is another job.
    expect(batchItemKey("b1", 0)).not.toBe("b1#0");
  });
});

describe("createBatch (the CLI's and bench's bulk sender)", () => {
  /** An item's answer; a 429 is the creates-per-second quota's unless `field` says otherwise. */
  const item = (index: number, status: number, retryAfter?: number, field = "quota.createsPerSecond") => {
    const answer: CreateJobsItemResponse = {
      index,
      status,
      ...(status < 300
        ? { jobId: `j${index}` }
        : { error: { code: "x", message: `jobs.${index}.${field}: m`, field: `jobs.${index}.${field}` } }),
      ...(retryAfter === undefined ? {} : { retryAfter }),
    };
    return answer;
  };

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

  it("lets a rate 429 stand after five rounds without progress; never resends other refusals", async () => {
    const sent: unknown[][] = [];
    const results = await createBatch(
      async (jobs) => {
        sent.push([...jobs]);
        return {
          created: 0,
          existing: 0,
          failed: jobs.length,
          results: jobs.map((j, i) =>
            j === "bad" ? item(i, 400) : j === "types" ? item(i, 429, 3600, "type") : item(i, 429, 1),
          ),
        };
      },
      ["bad", "types", "throttled"],
      async () => undefined,
    );
    // The first round made progress (two items answered for good); then five in a row did not.
    expect(sent).toEqual([["bad", "types", "throttled"], ...Array.from({ length: 5 }, () => ["throttled"])]);
    expect(results.map((r) => r.status)).toEqual([400, 429, 429]);
    // A resent item's error names its place in the whole batch, not in the subset resent.
    expect(results[2]?.error?.field).toBe("jobs.2.quota.createsPerSecond");
  });

  it("an item the answer left out is a 500 of its own", async () => {
    const results = await createBatch(
      async () => ({ created: 1, existing: 0, failed: 0, results: [item(0, 201)] }),
      ["a", "b"],
      async () => undefined,
    );
    expect(results.map((r) => [r.index, r.status])).toEqual([
      [0, 201],
      [1, 500],
    ]);
  });

  it("a quota's refusal carries retryAfter in the batch answer", async () => {
    const deps = memoryDeps(NOW, { tenantCreatesPerSecond: 2 });
    const answer = await bulk(deps, { jobs: [good(0), good(1), good(2)] });
    expect(answer.results.map((r) => r.status)).toEqual([201, 201, 429]);
    expect(answer.results[2]?.retryAfter).toBeGreaterThanOrEqual(1);
    expect(answer.results[2]?.error?.field).toBe("jobs.2.quota.createsPerSecond");
  });
});

describe("bulk create: one item's bad value is that item's", () => {
  it("a value DynamoDB would refuse (a number past 2^53, a lone surrogate, an empty key) fails its item only", async () => {
    const deps = memoryDeps(NOW);
    const answer = await bulk(deps, {
      jobs: [
        good(0),
        { ...good(1), payload: { n: 2 ** 60 } },
        { ...good(2), payload: { s: "\ud800" } },
        { ...good(3), payload: { "": 1 } },
        good(4),
      ],
    });
    expect(answer.results.map((r) => [r.status, r.error?.field])).toEqual([
      [201, undefined],
      [400, "jobs.1.payload.n"],
      [400, "jobs.2.payload.s"],
      [400, expect.stringMatching(/^jobs\.3\.payload/)],
      [201, undefined],
    ]);
    expect(deps.jobs.jobs.size).toBe(2);
  });

  it("a payload nested as deep as a single create allows is created in a batch too", async () => {
    const deps = memoryDeps(NOW);
    let deep: unknown = 1;
    for (let i = 0; i < 30; i++) deep = { d: deep };
    const answer = await bulk(deps, { jobs: [{ ...good(0), payload: deep }] });
    expect(answer.results[0]?.status).toBe(201);
  });

  it("an answer stays small when items echo huge keys: messages and fields are cut", async () => {
    const deps = memoryDeps(NOW);
    const huge = "k".repeat(65_000);
    const answer = await bulk(deps, {
      jobs: Array.from({ length: 100 }, (_, i) => ({ ...good(i), [huge]: 1 })),
    });
    expect(answer.failed).toBe(100);
    for (const item of answer.results) {
      expect(item.error?.message.length).toBeLessThanOrEqual(MAX_ITEM_MESSAGE_CHARS);
      expect(item.error?.field?.length).toBeLessThanOrEqual(MAX_ITEM_FIELD_CHARS);
    }
    // Lambda answers at most 6 MB; this worst case is far under it.
    expect(Buffer.byteLength(JSON.stringify(answer))).toBeLessThan(200_000);
  });
});
