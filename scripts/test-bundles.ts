/**
 * The bundle test (issue 16): runs the Lambda bundles that `cdk deploy` would upload (cdk.out,
 * from `npx cdk synth`) on Node.js 22, the runtime's major version, against the local
 * emulators, with only the AWS SDK beside them as the Lambda runtime provides it. Every test
 * imports the TypeScript sources on Node 20; this one catches what only the shipped bundle
 * shows (a dependency not bundled, an ESM/CJS mix-up, an API Node 22 changed).
 *
 *   npx tsx scripts/test-bundles.ts [--synth]
 *
 * --synth runs `npx cdk synth` first (CI synthesizes anyway). The Node.js 22 binary comes from
 * the npm registry's node-<platform>-<arch>@22 package, installed into .cache/node22 on first
 * use. Exits non-zero if a bundle cannot load or handle its event.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { LOCAL_SETTINGS, settingsEnvironment } from "../lambdas/definitions/settings";
import { bootstrapStack } from "../local/bootstrap";
import { startDynamo, startSqs } from "../local/emulators";
import { BUNDLE_BASE_ENV, node22, placeBundles, ROOT, synthesize } from "./bundles/bundle-support";

const TENANT = "arn:aws:iam::000000000000:role/tenant-a";
const WORKER = "arn:aws:iam::000000000000:role/jobsched-worker";

if (process.argv.includes("--synth")) synthesize();
const binary = node22();
const { scratch, placed } = placeBundles(["api", "internal", "tick", "sweeper", "dispatcher"]);

const [dynamo, sqs] = await Promise.all([startDynamo(), startSqs()]);
let status = 1;
try {
  const config = await bootstrapStack({
    dynamodbEndpoint: dynamo.endpoint,
    sqsEndpoint: sqs.endpoint,
    tableName: "bundle-test",
    settings: LOCAL_SETTINGS,
  });
  // Asynchronously: the emulators answer from this process's event loop.
  const child = spawn(binary, [join(ROOT, "scripts/bundles/harness.mjs")], {
    cwd: ROOT,
    stdio: "inherit",
    timeout: 120_000,
    env: {
      ...BUNDLE_BASE_ENV,
      TABLE_NAME: config.tableName,
      RUN_QUEUE_URL: config.runQueueUrl,
      PUSH_QUEUE_URL: config.pushQueueUrl,
      SWEEP_QUEUE_URL: config.sweepQueueUrl,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      SQS_ENDPOINT: sqs.endpoint,
      WORKER_BINDINGS: JSON.stringify({ [WORKER]: [TENANT] }),
      ...settingsEnvironment(LOCAL_SETTINGS),
      JOBSCHED_BUNDLES: JSON.stringify(placed),
      JOBSCHED_TENANT: TENANT,
      JOBSCHED_WORKER: WORKER,
    },
  });
  status = await new Promise<number>((done) => {
    child.on("error", (error) => {
      console.error(error);
      done(1);
    });
    child.on("exit", (code, signal) => {
      if (signal) console.error(`the harness was stopped (${signal}): timed out after 120 s?`);
      done(code ?? 1);
    });
  });
} finally {
  await Promise.all([dynamo.close(), sqs.close()]);
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);
