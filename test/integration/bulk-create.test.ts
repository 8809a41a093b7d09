import { beforeAll, describe, expect, it } from "vitest";
import { createApiHandler } from "../../lambdas/handlers/api";
import { httpEvent, invoke } from "../support/http-event";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Bulk create (issue 28): POST /api/v1/jobs/batch on the real handler, adapters, dynalite and
 * fauxqs. One bad item is that item's 400, naming it and its field; the other 99 are stored;
 * the same batch again (its idempotency key) creates nothing.
 */
interface BatchAnswer {
  created: number;
  existing: number;
  failed: number;
  results: Array<{
    index: number;
    status: number;
    jobId?: string;
    nextRunAt?: string;
    error?: { code: string; message: string; field?: string };
  }>;
}

describe("POST /api/v1/jobs/batch, on the emulators", () => {
  let stack: TestStack;
  let api: ReturnType<typeof createApiHandler>;

  beforeAll(async () => {
    // The default quotas: 200 creates a second per tenant.
    stack = await createTestStack("bulk");
    api = createApiHandler(stack.deps);
  });

  const BAD = 37;
  const runAt = new Date(Math.ceil((Date.now() + 3_600_000) / 1000) * 1000).toISOString();
  const jobs = Array.from({ length: 100 }, (_, i) =>
    i === BAD
      ? { type: "bulk.test", payload: { i }, runAt: "tomorrow at nine" }
      : { type: "bulk.test", payload: { i }, runAt },
  );
  const send = async () => {
    const answer = await invoke(
      api,
      httpEvent("POST /api/v1/jobs/batch", { body: { jobs, idempotencyKey: "bulk-test-1" } }),
    );
    expect(answer.status).toBe(200);
    return answer.body as unknown as BatchAnswer;
  };

  it("stores the 99 good items, answers the bad one's 400 naming it, and a repeat creates none", async () => {
    const first = await send();
    expect(first).toMatchObject({ created: 99, existing: 0, failed: 1 });
    expect(first.results.map((r) => r.index)).toEqual(jobs.map((_, i) => i));
    const bad = first.results[BAD];
    expect(bad?.status).toBe(400);
    expect(bad?.error?.field).toBe(`jobs.${BAD}.runAt`);
    expect(bad?.error?.message).toMatch(new RegExp(`^jobs\\.${BAD}\\.runAt: `));
    const ids = first.results.filter((r) => r.status === 201).map((r) => String(r.jobId));
    expect(new Set(ids).size).toBe(99);
    for (const jobId of ids.slice(0, 5)) {
      const job = await invoke(api, httpEvent("GET /api/v1/jobs/{jobId}", { pathParameters: { jobId } }));
      expect(job.status).toBe(200);
      expect(job.body).toMatchObject({
        jobId,
        type: "bulk.test",
        status: "active",
        nextRunAt: runAt.replace(".000", ""),
      });
    }

    const again = await send();
    expect(again).toMatchObject({ created: 0, existing: 99, failed: 1 });
    expect(again.results.filter((r) => r.status === 200).map((r) => r.jobId)).toEqual(ids);
    const listing = httpEvent("GET /api/v1/jobs");
    listing.queryStringParameters = { type: "bulk.test", limit: "100" };
    const listed = await invoke(api, listing);
    expect((listed.body.jobs as unknown[]).length).toBe(99);
  });

  it("answers a value DynamoDB would refuse as its item's 400 (the edge leaves items to the use case)", async () => {
    const answer = await invoke(
      api,
      httpEvent("POST /api/v1/jobs/batch", {
        body: {
          jobs: [
            { ...jobs[0], payload: { n: 2 ** 60 } },
            { ...jobs[1], payload: { ok: true } },
          ],
        },
      }),
    );
    expect(answer.status).toBe(200);
    const body = answer.body as unknown as BatchAnswer;
    expect(body.results.map((r) => [r.status, r.error?.field])).toEqual([
      [400, "jobs.0.payload.n"],
      [201, undefined],
    ]);
  });

  it("refuses a batch that is not one (no items, over 100, not a list) with a 400 and stores nothing", async () => {
    for (const [body, field] of [
      [{ jobs: [] }, "jobs"],
      [{ jobs: Array.from({ length: 101 }, () => jobs[0]) }, "jobs"],
      [{ jobs: "all of them" }, "jobs"],
      [{ jobs: [jobs[0]], idempotencyKey: "" }, "idempotencyKey"],
      [[jobs[0]], "body"],
    ] as const) {
      const answer = await invoke(api, httpEvent("POST /api/v1/jobs/batch", { body }));
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect((answer.body.error as { field?: string }).field).toBe(field);
    }
  });
});
