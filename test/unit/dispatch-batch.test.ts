import type { SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { InProcessTargetSlots } from "../../lambdas/adapters/targets/target-slots";
import type { RunMessage } from "../../lambdas/core/ports";
import { RunStatus } from "../../lambdas/core/run";
import type { RunEnvelope, TargetInvoker } from "../../lambdas/core/target";
import { createJob } from "../../lambdas/core/use-cases/create-job";
import { rotateWebhookSecret } from "../../lambdas/core/use-cases/webhook-secrets";
import { createDispatchHandler } from "../../lambdas/handlers/dispatch";
import { type MemoryDeps, memoryDeps } from "../support/memory-ports";

/**
 * Issue 27, finding 3: one dispatcher batch is several tenants' deliveries at once. An outcome
 * write that throws (a throttle) is that run's alone: the other deliveries run to their end and
 * their outcomes are written, and only the run whose outcome was not written is reported back
 * to the event source (a batch item failure), to come back when its lease lapses.
 */
const NOW = Date.parse("2027-01-04T09:00:00Z");
const QUEUE_URL = "https://sqs.local/push";
const webhook = { kind: "https", url: "https://hooks.example.com/a" };

async function pushJob(deps: MemoryDeps, tenant: string): Promise<{ jobId: string; message: RunMessage }> {
  const caller = { tenant, principal: `arn:aws:iam::1:role/${tenant}` };
  if (!(await deps.webhookSecrets.get(tenant))) await rotateWebhookSecret(deps, caller);
  const { jobId } = await createJob(deps, caller, { target: webhook, runAt: new Date(NOW).toISOString() });
  const sent = deps.queue.sent.find((s) => s.message.jobId === jobId);
  if (!sent) throw new Error("the create sent no run message");
  return { jobId, message: sent.message };
}

const record = (id: string, message: RunMessage) => ({
  messageId: id,
  receiptHandle: `handle-${id}`,
  body: JSON.stringify(message),
  attributes: { ApproximateReceiveCount: "1" },
});

describe("a dispatcher batch", () => {
  it("writes every other run's outcome when one outcome write throws, and reports back only that run", async () => {
    const deps = memoryDeps(NOW);
    const throttled = await pushJob(deps, "t");
    const others = [await pushJob(deps, "u"), await pushJob(deps, "u")];

    // The throttled run's outcome write fails; the other deliveries are still in flight then
    // (they answer only after it failed, on a later turn of the event loop).
    let failed: () => void = () => undefined;
    const afterTheFailure = new Promise<void>((resolve) => {
      failed = () => setTimeout(resolve, 0);
    });
    const runs = deps.runs;
    const finishRun: typeof runs.finishRun = async (jobId, ...rest) => {
      if (jobId === throttled.jobId) {
        failed();
        throw Object.assign(new Error("Rate of requests exceeds the allowed throughput"), {
          name: "ThrottlingException",
        });
      }
      return runs.finishRun(jobId, ...rest);
    };
    const throttling: MemoryDeps = { ...deps, runs: Object.assign(Object.create(runs), { finishRun }) };
    const targets: TargetInvoker = {
      deliver: async (_target, envelope: RunEnvelope) => {
        if (envelope.jobId !== throttled.jobId) await afterTheFailure;
        return { ok: true };
      },
    };
    const handler = createDispatchHandler(
      {
        ...throttling,
        targets,
        targetSlots: new InProcessTargetSlots(),
        sleep: async (ms) => deps.clock.advance(ms),
      },
      QUEUE_URL,
    );

    const answer = await handler({
      Records: [
        record("throttled", throttled.message),
        record("other-1", others[0]?.message as RunMessage),
        record("other-2", others[1]?.message as RunMessage),
      ],
    } as unknown as SQSEvent);

    for (const { jobId } of others) {
      expect((await deps.runs.listRecentRuns(jobId, 1))[0]?.status).toBe(RunStatus.Succeeded);
    }
    expect((await deps.runs.listRecentRuns(throttled.jobId, 1))[0]?.status).toBe(RunStatus.Leased);
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: "throttled" }]);
    expect(deps.warnings).toContain("push run's outcome could not be written; its message comes back");
  });
});
