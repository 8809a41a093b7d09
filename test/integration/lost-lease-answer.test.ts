import { describe, expect, it } from "vitest";
import { createDynamoClient, documentClientOf } from "../../lambdas/adapters/clients";
import { DynamoRunStore } from "../../lambdas/adapters/dynamo/dynamo-run-store";
import { newRun } from "../../lambdas/core/lifecycle/creation";
import { RunStatus } from "../../lambdas/core/run";
import { type AwsFaultEvent, AwsFaultKind, awsFaultPlugin, FAULT_MENU } from "../../local/aws-faults";
import { createTestStack } from "../support/stack";

/**
 * A lease whose write DynamoDB carried out but whose answer was lost (decision 0053): the SDK
 * retries the same write, whose condition now fails on the lease it made. On dynalite, through
 * the local runtime's own fault injection, the retry answers the run as leased (fence 1), so the
 * receive that made the lease keeps it instead of waiting for it to end.
 */
const T = Date.UTC(2026, 11, 5, 9, 0, 0);

/** The draws (in order) that make the next attempt a timeout carried out with its answer lost. */
function lostAnswerDraws(): number[] {
  const menu = FAULT_MENU.dynamodb;
  const index = menu.findIndex((shape) => shape.fault === AwsFaultKind.Timeout);
  const total = menu.reduce((sum, shape) => sum + shape.weight, 0);
  const before = menu.slice(0, index).reduce((sum, shape) => sum + shape.weight, 0);
  // Fail this attempt (under the rate), pick the timeout, carry the request out (under 0.5).
  return [0, (before + (menu[index]?.weight ?? 0) / 2) / total, 0.1];
}

describe("a lease whose answer is lost", () => {
  it("is answered to its receive on the SDK's retry: the run leased once, fence 1", async () => {
    // Prepare: a run on dynalite, and a store whose client loses the answer of the next write.
    const stack = await createTestStack("lost-lease-answer");
    const draws: number[] = [];
    const events: AwsFaultEvent[] = [];
    const client = createDynamoClient(stack.config);
    client.middlewareStack.use(
      awsFaultPlugin("dynamodb", {
        rate: 0.5,
        timeoutMs: 5,
        random: () => draws.shift() ?? 0.999,
        record: (event) => events.push(event),
      }),
    );
    const runs = new DynamoRunStore(documentClientOf(client), stack.config.tableName);
    const run = newRun({ jobId: "j_lostleaseanswer0000", tenant: "t1", type: "x" }, T, T, 30_000);
    expect(await runs.createRun(run)).toBe("created");
    draws.push(...lostAnswerDraws());

    // Act
    const grant = { workerId: "w1", startsAt: T, leaseExpiresAt: T + 30_000, receiptHandle: "rh-1", now: T };
    const leased = await runs.leaseRun(run.jobId, run.scheduledFor, grant);

    // Assess: the write was carried out twice (the fault, then the retry) and leased once.
    expect(events.filter((e) => e.kind === "aws-fault")).toMatchObject([
      { operation: "UpdateItem", fault: "timeout", applied: true },
    ]);
    expect(leased).toMatchObject({ status: RunStatus.Leased, fence: 1, attempt: 1, workerId: "w1" });
    expect(await stack.deps.runs.getRun(run.jobId, run.scheduledFor)).toEqual(leased);
    // Another receive's lease of the same run is still refused.
    expect(
      await runs.leaseRun(run.jobId, run.scheduledFor, { ...grant, receiptHandle: "rh-2" }),
    ).toBeUndefined();
  });
});
