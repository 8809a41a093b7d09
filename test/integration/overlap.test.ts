import {
  createJobResponse,
  errorResponse,
  jobResponse,
  leasesResponse,
  runResponse,
} from "@jobsched/contract";
import { createWorker, type LeasedRun } from "@jobsched/worker";
import { describe, expect, it } from "vitest";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { fireJobs } from "../../lambdas/core/use-cases/fire-jobs";
import { getJob } from "../../lambdas/core/use-cases/get-job";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { loadLocalCredentials } from "../../local/local-credentials";
import { startTestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { OffsetClock } from "../support/offset-clock";
import { createTestStack } from "../support/stack";

/**
 * Overlap policies on dynalite and fauxqs (issue 18): a minute job whose run outlasts its
 * minute under `skip`, with the clock moved on a minute; and `cancel-previous` through the local
 * gateway with the worker SDK, whose handler's signal aborts when its lease is revoked.
 */
const MINUTE = 60_000;
const tenant = { tenant: "t", principal: "arn:aws:iam::1:user/operator" };
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["t"] };
const iso = (ms: number) => new Date(ms).toISOString().replace(".000", "");

describe("overlap policies, end to end", () => {
  it("skip: a minute job's run that outlasts its minute makes the next firing a skipped record", async () => {
    const clock = new OffsetClock();
    // One firing's run a sweep: the clock moves a minute, SQS's delays do not (decision 0044).
    const stack = await createTestStack("overlap-skip", { clock, settings: { advanceBlockSeconds: 0 } });
    // Two seconds before a minute: the create makes that minute's run at once.
    clock.advance(MINUTE - (clock.now() % MINUTE) - 2_000);
    const { jobId } = await createJob(stack.deps, tenant, {
      type: "slow-minute",
      cron: "* * * * *",
      overlapPolicy: "skip",
      leaseSeconds: 600,
    });
    const first = Math.ceil(clock.now() / MINUTE) * MINUTE;
    const [held] = await leaseRuns(stack.deps, worker, {
      workerId: "w",
      types: ["slow-minute"],
      waitSeconds: 5,
    });
    expect(held?.scheduledFor).toBe(iso(first));

    // A minute on, the run still held: the sweep makes the next firing's run, and it is skipped.
    clock.advance(MINUTE);
    const job = await stack.deps.jobs.getJob(jobId);
    await fireJobs(stack.deps, [{ ...(job as NonNullable<typeof job>), nextRunAt: job?.nextRunAt ?? 0 }]);
    expect(
      await leaseRuns(stack.deps, worker, { workerId: "w", types: ["slow-minute"], waitSeconds: 5 }),
    ).toEqual([]);
    const runs = (await getJob(stack.deps, tenant, jobId)).runs;
    expect(runs.find((r) => r.scheduledFor === iso(first + MINUTE))).toMatchObject({
      status: "skipped",
      error: `the run of ${iso(first)} was still unfinished (overlapPolicy skip)`,
    });
    expect(runs.find((r) => r.scheduledFor === iso(first))).toMatchObject({ status: "leased" });
  }, 60_000);

  it("cancel-previous: the old run's handler signal aborts and its completion is 409; the new run runs", async () => {
    const stack = await createTestStack("overlap-cancel");
    const api = await startTestApi(stack);
    try {
      const created = await api.tenantA("POST", "/api/v1/jobs", {
        body: { type: "replaced", cron: "0 0 1 1 *", overlapPolicy: "cancel-previous", leaseSeconds: 5 },
      });
      const { jobId } = bodyOf(createJobResponse, created);
      const credentials = loadLocalCredentials();
      const started: LeasedRun[] = [];
      const aborted: string[] = [];
      const w = createWorker({
        endpoint: api.url,
        region: credentials.region,
        credentials: credentials.first("worker"),
        types: ["replaced"],
        concurrency: 2,
        stopOnSignals: false,
        log: () => undefined,
        handler: async (run, { signal }) => {
          started.push(run);
          if (started.length > 1) return; // the newer run finishes at once
          await new Promise<void>((done) => signal.addEventListener("abort", () => done(), { once: true }));
          aborted.push(run.runKey);
        },
      });
      const trigger = async () =>
        bodyOf(runResponse, await api.tenantA("POST", `/api/v1/jobs/${jobId}/trigger`, { body: {} }));
      const old = await trigger();
      const waitFor = async (done: () => boolean) => {
        for (let i = 0; i < 150 && !done(); i++) await new Promise((r) => setTimeout(r, 100));
      };
      await waitFor(() => started.length === 1);
      const newer = await trigger();
      await waitFor(() => aborted.length === 1 && started.length === 2);
      await w.stop();

      expect(aborted).toEqual([old.runKey]);
      expect(started.map((r) => r.runKey)).toEqual([old.runKey, newer.runKey]);
      const oldLease = started[0] as LeasedRun;
      const late = await api.worker("POST", `/internal/leases/${oldLease.runId}/complete`, {
        body: { fence: oldLease.fence, result: "succeeded" },
      });
      expect(late.status).toBe(409);
      expect(bodyOf(errorResponse, late).error.code).toBe("StaleFence");
      const runs = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`)).runs;
      expect(runs.find((r) => r.runKey === old.runKey)).toMatchObject({
        status: "cancelled",
        fence: oldLease.fence + 1,
      });
      expect(runs.find((r) => r.runKey === newer.runKey)).toMatchObject({ status: "succeeded" });
    } finally {
      await api.close();
    }
  }, 60_000);
});

describe("at-most-once delivery, end to end", () => {
  it("records a run whose worker vanished mid-run as lost, and never leases it again", async () => {
    const stack = await createTestStack("at-most-once");
    const api = await startTestApi(stack);
    try {
      const created = await api.tenantA("POST", "/api/v1/jobs", {
        body: {
          type: "once-only",
          runAt: iso(Date.now() + 1_000),
          leaseSeconds: 5,
          delivery: "at-most-once",
        },
      });
      const { jobId } = bodyOf(createJobResponse, created);
      const lease = async () =>
        bodyOf(
          leasesResponse,
          await api.worker("POST", "/internal/leases", {
            body: { workerId: "w-vanishing", types: ["once-only"], max: 1, waitSeconds: 10 },
          }),
        );
      const [first] = await lease();
      expect(first?.attempt).toBe(1);
      // The worker dies without a heartbeat: the message comes back when the lease has lapsed.
      expect(await lease()).toEqual([]);
      const job = bodyOf(jobResponse, await api.tenantA("GET", `/api/v1/jobs/${jobId}`));
      expect(job.delivery).toBe("at-most-once");
      expect(job.runs).toMatchObject([
        { runKey: first?.runKey, status: "lost", attempt: 1, error: expect.stringContaining("at-most-once") },
      ]);
      expect(job.status).toBe("completed");
      const late = await api.worker("POST", `/internal/leases/${first?.runId}/complete`, {
        body: { fence: first?.fence, result: "succeeded" },
      });
      expect(late.status).toBe(409);
    } finally {
      await api.close();
    }
  }, 60_000);
});
