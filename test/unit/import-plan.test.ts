import { describe, expect, it } from "vitest";
import { importStep } from "../../cli/export/import-plan";

/** What `jobsched import jobs` makes of each line of an export (cli/export/import-plan.ts). */
const NOW = Date.parse("2026-12-02T12:00:00Z");
const line = (fields: Record<string, unknown>, job: Record<string, unknown> = {}) => ({
  exportVersion: 1,
  jobId: "j_0123456789abcdefghjk",
  status: "active",
  createdAt: "2026-11-01T00:00:00Z",
  ...fields,
  job: { type: "t", importedFrom: "j_0123456789abcdefghjk", ...job },
});

describe("importStep", () => {
  it("creates an active job again under its own key, or import:<id> when it had none", () => {
    const keyless = importStep(1, line({ nextRunAt: "2026-12-03T09:00:00Z" }, { cron: "0 9 * * *" }), NOW);
    expect(keyless).toMatchObject({
      kind: "create",
      body: { idempotencyKey: "import:j_0123456789abcdefghjk" },
    });
    const keyed = importStep(2, line({}, { cron: "0 9 * * *", idempotencyKey: "mine" }), NOW);
    expect(keyed).toMatchObject({ kind: "create", body: { idempotencyKey: "mine", cron: "0 9 * * *" } });
    expect(keyed).toMatchObject({ paused: false });
    expect((keyed as { body: object }).body).not.toHaveProperty("paused");
  });

  it("creates a paused job paused, with its reason: no run fires before it is", () => {
    const step = importStep(
      1,
      line({ status: "paused", pauseReason: "holiday" }, { cron: "0 9 * * *" }),
      NOW,
    );
    expect(step).toMatchObject({ kind: "create", paused: true, body: { paused: { reason: "holiday" } } });
    expect(importStep(1, line({ status: "paused" }, { cron: "0 9 * * *" }), NOW)).toMatchObject({
      body: { paused: {} },
    });
  });

  it("skips a recurring job whose schedule has ended", () => {
    const ended = line({ status: "paused" }, { cron: "0 9 * * *", endAt: "2026-12-01T00:00:00Z" });
    expect(importStep(1, ended, NOW)).toMatchObject({
      kind: "skip",
      reason: expect.stringContaining("ended"),
    });
    const going = line({}, { cron: "0 9 * * *", endAt: "2026-12-31T00:00:00Z" });
    expect(importStep(1, going, NOW)).toMatchObject({ kind: "create" });
  });

  it("skips completed and cancelled jobs, and a one-off whose run the source already created", () => {
    expect(importStep(1, line({ status: "completed" }), NOW)).toMatchObject({ kind: "skip" });
    expect(importStep(1, line({ status: "cancelled" }), NOW)).toMatchObject({ kind: "skip" });
    const underWay = importStep(1, line({}, { runAt: "2026-12-02T11:59:00Z" }), NOW);
    expect(underWay).toMatchObject({ kind: "skip", reason: expect.stringContaining("already created") });
  });

  it("keeps a one-off's time while the API takes it, runs it at once when it passed, skips it under skip", () => {
    const recent = importStep(
      1,
      line({ nextRunAt: "2026-12-02T11:58:00Z" }, { runAt: "2026-12-02T11:58:00Z" }),
      NOW,
    );
    expect(recent).toMatchObject({ kind: "create", body: { runAt: "2026-12-02T11:58:00Z" } });
    const passed = line({ nextRunAt: "2026-12-02T10:00:00Z" }, { runAt: "2026-12-02T10:00:00Z" });
    expect(importStep(1, passed, NOW)).toMatchObject({
      kind: "create",
      body: { runAt: "2026-12-02T12:00:00.000Z" },
      note: expect.stringContaining("runs at once"),
    });
    const skipped = line(
      { nextRunAt: "2026-12-02T10:00:00Z" },
      { runAt: "2026-12-02T10:00:00Z", missedRuns: "skip" },
    );
    expect(importStep(1, skipped, NOW)).toMatchObject({ kind: "skip" });
  });

  it("names what is wrong with a line that is not an export's", () => {
    expect(importStep(3, [], NOW)).toEqual({ kind: "invalid", line: 3, problem: "not a JSON object" });
    expect(importStep(3, { ...line({}), exportVersion: 2 }, NOW)).toMatchObject({
      problem: expect.stringMatching(/^exportVersion/),
    });
    expect(importStep(3, { ...line({}), jobId: 5 }, NOW)).toMatchObject({
      problem: expect.stringMatching(/^jobId/),
    });
    expect(importStep(3, { ...line({}), status: "gone" }, NOW)).toMatchObject({
      problem: expect.stringMatching(/^status/),
    });
    expect(importStep(3, { ...line({}), job: "x" }, NOW)).toMatchObject({
      problem: expect.stringMatching(/^job:/),
    });
  });
});
