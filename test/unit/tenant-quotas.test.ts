import { describe, expect, it } from "vitest";
import { QuotaExceededError } from "../../lambdas/core/errors";
import { controlJob } from "../../lambdas/core/use-cases/control-job";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { memoryDeps } from "../support/memory-ports";

/** The create use case against the tenant quotas (issue 15), on the fake clock. */
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0);
const alice = { tenant: "a", principal: "arn:aws:iam::1:user/alice" };
const bob = { tenant: "b", principal: "arn:aws:iam::1:user/bob" };
const body = (extra: Record<string, unknown> = {}) => ({
  type: "x",
  runAt: new Date(NOW + 3_600_000).toISOString(),
  ...extra,
});

async function refusal(promise: Promise<unknown>): Promise<QuotaExceededError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof QuotaExceededError))
    throw new Error(`expected a quota refusal, got ${String(error)}`);
  return error;
}

describe("tenant quotas on creating jobs", () => {
  it("refuses the creates past the per-second rate, for a second, and writes nothing", async () => {
    const deps = memoryDeps(NOW, { tenantCreatesPerSecond: 3, tenantMaxActiveJobs: 0 });
    for (let i = 0; i < 3; i++) await createJob(deps, alice, body());
    const error = await refusal(createJob(deps, alice, body()));
    expect(error).toMatchObject({ field: "quota.createsPerSecond", retryAfterSeconds: 1 });
    expect(error.message).toContain("3 jobs created a second");
    expect(deps.jobs.jobs.size).toBe(3);
    await createJob(deps, bob, body()); // another tenant's own quota
    deps.clock.advance(1_000);
    await createJob(deps, alice, body());
    expect(deps.jobs.jobs.size).toBe(5);
  });

  it("refuses a job past the active-jobs quota until one ends", async () => {
    const deps = memoryDeps(NOW, { tenantCreatesPerSecond: 0, tenantMaxActiveJobs: 2 });
    const first = await createJob(deps, alice, body());
    await createJob(deps, alice, body());
    expect(await refusal(createJob(deps, alice, body()))).toMatchObject({
      field: "quota.activeJobs",
      retryAfterSeconds: 60,
    });
    await controlJob(deps, alice, first.jobId, "cancel");
    await createJob(deps, alice, body());
    expect(deps.jobs.jobs.size).toBe(3);
  });

  it("refuses a new type past the types quota; known types still work", async () => {
    const deps = memoryDeps(NOW, { tenantMaxJobTypes: 1 });
    await createJob(deps, alice, body({ type: "one" }));
    expect(await refusal(createJob(deps, alice, body({ type: "two" })))).toMatchObject({ field: "type" });
    await createJob(deps, alice, body({ type: "one" }));
    await createJob(deps, bob, body({ type: "two" }));
  });

  it("answers a repeated idempotent create that was stored, even at the quota, and does not count it", async () => {
    const deps = memoryDeps(NOW, { tenantCreatesPerSecond: 0, tenantMaxActiveJobs: 1 });
    const first = await createJob(deps, alice, body({ idempotencyKey: "k" }));
    const again = await createJob(deps, alice, body({ idempotencyKey: "k" }));
    expect(again).toEqual({ ...first, created: false });
    expect(deps.quotas.active.get("a")).toBe(1);
  });

  it("gives back the count of a repeat that found its job stored", async () => {
    const deps = memoryDeps(NOW, { tenantCreatesPerSecond: 0, tenantMaxActiveJobs: 5 });
    await createJob(deps, alice, body({ idempotencyKey: "k" }));
    await createJob(deps, alice, body({ idempotencyKey: "k" }));
    await createJob(deps, alice, body({ idempotencyKey: "k" }));
    expect(deps.quotas.active.get("a")).toBe(1);
  });
});
