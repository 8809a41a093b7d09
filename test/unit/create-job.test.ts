import { MAX_PAYLOAD_BYTES } from "@jobsched/contract";
import { describe, expect, it } from "vitest";
import { DELIVERY_LEAD_SECONDS } from "../../lambdas/core/delivery";
import { IdempotencyConflictError, ValidationError } from "../../lambdas/core/errors";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { memoryDeps } from "../support/memory-ports";

const NOW = Date.UTC(2026, 10, 2, 8, 0, 0);
const caller = { tenant: "tenant-a", principal: "arn:aws:iam::111122223333:role/a" };
const at = (ms: number) => new Date(ms).toISOString();

async function rejection(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe("createJob", () => {
  it("stores a one-off job and answers its id and next run time", async () => {
    // Prepare
    const deps = memoryDeps(NOW);
    // Act
    const result = await createJob(deps, caller, {
      type: "send-invoice",
      payload: { id: 1 },
      runAt: at(NOW + 3_600_000),
    });
    // Assess
    expect(result).toMatchObject({ created: true, nextRunAt: "2026-11-02T09:00:00Z" });
    const stored = await deps.jobs.getJob(result.jobId);
    expect(stored).toMatchObject({
      tenant: "tenant-a",
      type: "send-invoice",
      payload: { id: 1 },
      status: "active",
    });
    expect(stored?.createdBy).toBe(caller.principal);
    expect(deps.queue.sent).toHaveLength(0); // far off: left to the sweep
  });

  it("fires a job due before the next sweep at once, with a delay that lands on its second", async () => {
    const deps = memoryDeps(NOW);
    const result = await createJob(deps, caller, { type: "x", runAt: at(NOW + 5_000) });
    expect(deps.queue.sent).toEqual([
      {
        message: expect.objectContaining({ jobId: result.jobId, scheduledFor: NOW + 5_000 }),
        delaySeconds: 5 - DELIVERY_LEAD_SECONDS,
      },
    ]);
    expect((await deps.jobs.getJob(result.jobId))?.nextRunAt).toBeUndefined();
  });

  it("creates a job paused when asked: out of the due index, no run fired, the reason in its audit", async () => {
    const deps = memoryDeps(NOW);
    const result = await createJob(deps, caller, {
      type: "x",
      cron: "* * * * *",
      paused: { reason: "moved from another deployment" },
    });
    expect(deps.queue.sent).toEqual([]); // due within the lookahead, yet nothing fired
    const stored = await deps.jobs.getJob(result.jobId);
    expect(stored).toMatchObject({ status: "paused", nextRunAt: NOW }); // due now: active, it would fire
    expect(stored?.audit.map((a) => [a.action, a.reason])).toEqual([
      ["created", undefined],
      ["paused", "moved from another deployment"],
    ]);
    const silent = await createJob(deps, caller, { type: "x", cron: "* * * * *", paused: {} });
    expect((await deps.jobs.getJob(silent.jobId))?.audit.at(-1)).not.toHaveProperty("reason");
  });

  it("draws an imported job's jitter from the id it had, and records it", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", cron: "0 * * * *", jitter: "PT30M" };
    const from = "j_0123456789abcdefghjk";
    const imported = await createJob(deps, caller, { ...body, importedFrom: from });
    const again = await createJob(deps, caller, { ...body, importedFrom: from });
    const plain = await createJob(deps, caller, body);
    const stored = await deps.jobs.getJob(imported.jobId);
    expect(stored?.importedFrom).toBe(from);
    expect(stored?.schedule.jitter?.seed).toBe(from);
    // The same seed, the same offsets, whatever the new job's id.
    expect(again.nextRunAt).toBe(imported.nextRunAt);
    expect((await deps.jobs.getJob(plain.jobId))?.schedule.jitter?.seed).toBe(plain.jobId);
    await expect(createJob(deps, caller, { ...body, importedFrom: "not-an-id" })).rejects.toThrow(
      /importedFrom/,
    );
  });

  it("still accepts a recurring job when firing it fails; the sweep finds it later", async () => {
    const deps = memoryDeps(NOW + 59_000);
    deps.queue.failSends = true;
    const result = await createJob(deps, caller, { type: "x", cron: "* * * * *" });
    expect(result.created).toBe(true);
    expect((await deps.jobs.getJob(result.jobId))?.nextRunAt).toBe(NOW + 60_000);
    expect(deps.warnings).toHaveLength(1);
  });

  it("returns the original job for a retried request with the same idempotency key", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 3_600_000), idempotencyKey: "invoice-8812" };
    const first = await createJob(deps, caller, body);
    deps.clock.advance(60_000);
    const again = await createJob(deps, caller, { ...body });
    expect(again).toEqual({ ...first, created: false });
    expect(deps.jobs.jobs.size).toBe(1);
  });

  it("refuses the same idempotency key with a different body, and keeps the original", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 3_600_000), idempotencyKey: "k" };
    const first = await createJob(deps, caller, body);
    await expect(createJob(deps, caller, { ...body, payload: { other: true } })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    expect((await deps.jobs.getJob(first.jobId))?.payload).toBeNull();
  });

  it("keeps tenants' idempotency keys apart", async () => {
    const deps = memoryDeps(NOW);
    const body = { type: "x", runAt: at(NOW + 3_600_000), idempotencyKey: "same" };
    const a = await createJob(deps, caller, body);
    const b = await createJob(deps, { tenant: "tenant-b", principal: "p" }, body);
    expect(b.created).toBe(true);
    expect(b.jobId).not.toBe(a.jobId);
  });

  it.each([
    ["an unknown field", { type: "x", runAt: at(NOW), cron: "* * * * *" }, "cron"],
    ["a missing type", { runAt: at(NOW) }, "type"],
    ["a bad type name", { type: "has space", runAt: at(NOW) }, "type"],
    ["a runAt with no offset", { type: "x", runAt: "2026-11-02T09:00:00" }, "runAt"],
    ["a runAt long past", { type: "x", runAt: at(NOW - 6 * 60_000) }, "runAt"],
    ["maxAttempts of zero", { type: "x", runAt: at(NOW), maxAttempts: 0 }, "maxAttempts"],
    ["maxAttempts that is not whole", { type: "x", runAt: at(NOW), maxAttempts: 1.5 }, "maxAttempts"],
    ["an empty idempotency key", { type: "x", runAt: at(NOW), idempotencyKey: "" }, "idempotencyKey"],
    ["a body that is not an object", [1, 2], "body"],
  ])("rejects %s with a 400 naming the field, and stores nothing", async (_name, body, field) => {
    const deps = memoryDeps(NOW);
    const error = await rejection(createJob(deps, caller, body));
    expect(error.field).toBe(field);
    expect(deps.jobs.jobs.size).toBe(0);
  });

  it("rejects a payload over the size limit", async () => {
    const deps = memoryDeps(NOW);
    const payload = { blob: "x".repeat(MAX_PAYLOAD_BYTES) };
    const error = await rejection(createJob(deps, caller, { type: "x", runAt: at(NOW), payload }));
    expect(error.field).toBe("payload");
    expect(error.message).toContain(String(MAX_PAYLOAD_BYTES));
  });

  it("applies the deployment's lower payload limit and its default retry backoff", async () => {
    const deps = memoryDeps(NOW, { maxPayloadBytes: 100, retryBaseSeconds: 3, retryCapSeconds: 60 });
    const error = await rejection(
      createJob(deps, caller, { type: "x", runAt: at(NOW + 3_600_000), payload: { blob: "x".repeat(100) } }),
    );
    expect(error).toMatchObject({ field: "payload", message: "payload: must be at most 100 bytes of JSON" });
    expect(deps.jobs.jobs.size).toBe(0);
    const { jobId } = await createJob(deps, caller, {
      type: "x",
      runAt: at(NOW + 3_600_000),
      payload: { small: 1 },
    });
    expect((await deps.jobs.getJob(jobId))?.retry).toEqual({ baseMs: 3_000, capMs: 60_000 });
  });
});
