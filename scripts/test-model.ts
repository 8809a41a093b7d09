/**
 * The run lifecycle's model-based test with a budget of your choosing and a random seed, as a
 * nightly job would run it (issue 27): `npm run test:model -- --runs 100000 [--seed N]`, on
 * the in-memory stores (`npm test` runs the dynalite variant). It prints the seed first, so a failure can be run again exactly, and exits 1
 * with the shrunk counterexample and the steps that led to it.
 */
import { parseArgs } from "node:util";
import { checkLifecycle } from "../test/model/run-model";
import { memoryStores } from "../test/model/world";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10000" },
    seed: { type: "string" },
    timing: { type: "string", default: "local" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(
    "usage: npm run test:model -- [--runs N (10000)] [--seed N (random)] [--timing local|cloud]\n       --timing cloud: a tick a minute, each shard group swept every other tick, 150 s ahead (decision 0056)",
  );
  process.exit(0);
}
const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error("--runs and --seed must be whole numbers (runs at least 1)");
  process.exit(2);
}
if (values.timing !== "local" && values.timing !== "cloud") {
  console.error("--timing: local (the local runtime's) or cloud (the cloud's)");
  process.exit(2);
}
const timing = values.timing;
console.log(`run lifecycle model: ${runs} sequences, seed ${seed}, ${timing} timing`);
const started = Date.now();
try {
  await checkLifecycle({ numRuns: runs, seed, stores: memoryStores, timing });
  console.log(
    `passed: ${runs} sequences in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${seed}, ${timing} timing)`,
  );
} catch (error) {
  console.log(error instanceof Error ? error.message : String(error));
  // fast-check keeps the failing check's own message (and the World's steps) in the cause.
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause !== undefined)
    console.log(`\nthe check that failed:\n${cause instanceof Error ? cause.message : String(cause)}`);
  console.log(`FAILED after ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${seed})`);
  process.exit(1);
}
