import { marshall } from "@aws-sdk/util-dynamodb";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { itemSize } from "../../lambdas/adapters/dynamo/item-size";
import { toRunItem } from "../../lambdas/adapters/dynamo/run-item";
import {
  errorExcerpt,
  FAILED_ATTEMPT_ERROR_CHARS,
  FAILED_ATTEMPTS_KEPT,
  failedAttemptsAfter,
} from "../../lambdas/core/lifecycle/failed-attempts";
import { type Run, RunStatus } from "../../lambdas/core/run";
import { completeRun } from "../../lambdas/core/use-cases/complete-run";
import { leaseRuns } from "../../lambdas/core/use-cases/lease-runs";
import { runView } from "../../lambdas/core/views";
import { dueRun, memoryDeps } from "../support/memory-ports";

/**
 * A run keeps its failed attempts (decision 0062): each retry records the attempt that failed,
 * bounded in number and in each error's length, so the console's timeline can show them.
 */
const NOW = Date.UTC(2026, 11, 6, 9, 0, 0);
const worker = { principal: "arn:aws:iam::1:role/worker", tenants: ["a"] };
const alice = { tenant: "a", principal: "arn:aws:iam::1:user/alice" };

describe("a run's failed attempts", () => {
  it("are recorded by each retry with the attempt's lease, start, failure and error; the run keeps its latest", async () => {
    const deps = memoryDeps(NOW);
    await dueRun(deps, { maxAttempts: 3, retry: { base: "PT1S", cap: "PT2S" } }, alice);
    const starts: number[] = [];
    for (const error of ["timeout talking to billing", "still down"]) {
      deps.queue.deliverAll(); // the retry's message, once its delay is over
      const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 1, waitSeconds: 5 });
      if (!lease) throw new Error("nothing leased");
      starts.push(deps.clock.now());
      deps.clock.advance(700);
      await completeRun(deps, worker, lease.runId, {
        fence: lease.fence,
        result: "failed",
        retryable: true,
        error,
      });
      deps.clock.advance(3_000);
    }
    deps.queue.deliverAll();
    const [lease] = await leaseRuns(deps, worker, { workerId: "w", types: ["x"], max: 1, waitSeconds: 5 });
    if (!lease) throw new Error("the third attempt was not leased");
    await completeRun(deps, worker, lease.runId, { fence: lease.fence, result: "succeeded" });

    const [run] = [...deps.runs.runs.values()];
    expect(run).toMatchObject({ status: RunStatus.Succeeded, attempt: 3, fence: 3, error: undefined });
    expect(run?.failedAttempts).toEqual([
      {
        attempt: 1,
        fence: 1,
        startedAt: starts[0],
        failedAt: (starts[0] ?? 0) + 700,
        error: "timeout talking to billing",
      },
      { attempt: 2, fence: 2, startedAt: starts[1], failedAt: (starts[1] ?? 0) + 700, error: "still down" },
    ]);
    // As the API answers it: instants as ISO strings.
    expect(runView(run as Run).failedAttempts?.[0]).toEqual({
      attempt: 1,
      fence: 1,
      startedAt: new Date(starts[0] ?? 0).toISOString().replace(".000Z", "Z"),
      failedAt: new Date((starts[0] ?? 0) + 700).toISOString().replace(".000Z", "Z"),
      error: "timeout talking to billing",
    });
  });

  it("keep the last few, oldest dropped, and each error's beginning in whole characters", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.string({ unit: "binary", maxLength: 400 }),
        (n, error) => {
          let run: Pick<Run, "attempt" | "fence" | "startedAt" | "failedAttempts"> = {
            attempt: 0,
            fence: 0,
            startedAt: undefined,
            failedAttempts: undefined,
          };
          for (let i = 1; i <= n; i += 1) {
            const at = { attempt: i, fence: i + 1, startedAt: NOW + i * 1000 };
            run = {
              ...at,
              failedAttempts: failedAttemptsAfter({ ...run, ...at }, error, NOW + i * 1000 + 5),
            };
          }
          const kept = run.failedAttempts ?? [];
          expect(kept).toHaveLength(Math.min(n, FAILED_ATTEMPTS_KEPT));
          expect(kept.at(-1)).toMatchObject({ attempt: n, fence: n + 1, failedAt: NOW + n * 1000 + 5 });
          expect(kept.map((a) => a.attempt)).toEqual(
            Array.from({ length: kept.length }, (_, i) => n - kept.length + 1 + i),
          );
          for (const attempt of kept) {
            const chars = Array.from(attempt.error);
            expect(chars.length).toBeLessThanOrEqual(FAILED_ATTEMPT_ERROR_CHARS);
            // Never half a character: a cut error is the original's first code points and a mark.
            if (attempt.error !== error) {
              expect(error.startsWith(chars.slice(0, -1).join(""))).toBe(true);
              expect(chars.at(-1)).toBe("…");
            }
          }
        },
      ),
    );
    expect(errorExcerpt("short")).toBe("short");
    // A cut that would fall inside a surrogate pair drops the whole character.
    expect(errorExcerpt(`${"a".repeat(198)}😀b`)).toBe(`${"a".repeat(198)}…`);
  });

  it("stay far inside DynamoDB's item limit at the worst: a hundred attempts of 4,096 four-byte characters", () => {
    const error = "😀".repeat(4096);
    let run: Run = {
      runId: "r",
      jobId: "j".repeat(64),
      tenant: "t".repeat(64),
      type: "x".repeat(128),
      scheduledFor: NOW,
      status: RunStatus.Leased,
      attempt: 0,
      fence: 0,
      createdAt: NOW,
      startedAt: NOW,
      leaseExpiresAt: NOW + 30_000,
      workerId: "w".repeat(128),
      finishedAt: undefined,
      error,
      checkAt: NOW,
      final: false,
    };
    for (let i = 1; i <= 100; i += 1) {
      run = { ...run, attempt: i, fence: i, failedAttempts: failedAttemptsAfter(run, error, NOW + i) };
    }
    const listBytes = itemSize(marshall({ f: run.failedAttempts }, { removeUndefinedValues: true }));
    // Ten entries of 200 characters at 4 bytes each, and their numbers and names.
    expect(listBytes).toBeLessThan(FAILED_ATTEMPTS_KEPT * (FAILED_ATTEMPT_ERROR_CHARS * 4 + 100));
    const total = itemSize(marshall(toRunItem(run), { removeUndefinedValues: true }));
    expect(total).toBeLessThan(400 * 1024);
  });
});
