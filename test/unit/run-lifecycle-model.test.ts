import { describe, it } from "vitest";
import { checkLifecycle } from "../model/run-model";
import { memoryStores } from "../model/world";

/**
 * The run lifecycle's model-based test on the in-memory stores (issue 27): 10,000 generated
 * sequences of API calls, worker actions, crashes, duplicate messages and clock moves, with a
 * fixed seed so a failure here is the same failure everywhere. `npm run test:model -- --runs N`
 * runs it with a random seed.
 */
describe("run lifecycle, model-based", () => {
  it("keeps (a)-(f) after every step of 10,000 generated sequences, and ends every run once workers stop failing", async () => {
    await checkLifecycle({ numRuns: 10_000, seed: 20261202, stores: memoryStores });
  }, 900_000);
});
