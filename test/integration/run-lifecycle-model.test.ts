import { describe, it } from "vitest";
import type { Run } from "../../lambdas/core/run";
import { checkLifecycle } from "../model/run-model";
import type { Stores } from "../model/world";
import { createTestStack } from "../support/stack";

/**
 * The run lifecycle's model-based test on the DynamoDB stores (dynalite), each sequence on a
 * table of its own: the same commands and checks as the in-memory run (test/unit), with a
 * shorter budget. The queue stays the model's (SQS's timing on the fake clock: fauxqs keeps
 * the wall clock's, which a generated sequence of clock moves cannot drive).
 */
async function dynaliteStores(): Promise<Stores> {
  const { deps } = await createTestStack("model");
  return {
    jobs: deps.jobs,
    runs: deps.runs,
    runsOf: async (jobId) => {
      const all: Run[] = [];
      let cursor: string | undefined;
      do {
        const page = await deps.runs.listRuns(jobId, 100, cursor);
        all.push(...page.items);
        cursor = page.cursor;
      } while (cursor !== undefined);
      return all;
    },
  };
}

describe("run lifecycle, model-based, on DynamoDB (dynalite)", () => {
  it("keeps (a)-(f) after every step and ends every run once workers stop failing, on the DynamoDB stores", async () => {
    await checkLifecycle({ numRuns: 40, seed: 20261202, maxCommands: 25, stores: dynaliteStores });
  }, 600_000);
});
