import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { ensureQueues, ensureTable } from "./bootstrap";
import { startDynamo, startSqs } from "./emulators";
import { runExampleWorker } from "./example-worker";
import { startHttpGateway } from "./http-gateway";
import { startTicker } from "./ticker";

/**
 * `npm start`: the whole of jobsched on one machine. The emulators and the Lambda handlers run
 * in this process; job data lives in .jobsched/ and survives restarts.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";
process.env.POWERTOOLS_DEV ??= "true";
// The SDK warns that its 2027 releases will need Node 22; the lock file pins today's, which run on 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const { createDynamoClient, createSqsClient } = await import("../lambdas/adapters/clients");
const { createSchedulerDeps } = await import("../lambdas/adapters/scheduler-deps");
const { createApiHandler } = await import("../lambdas/handlers/api");
const { createInternalHandler } = await import("../lambdas/handlers/internal");
const { LOCAL_SETTINGS } = await import("../lambdas/definitions/settings");

const started = Date.now();
const dataDir = resolve(process.env.JOBSCHED_DATA_DIR ?? ".jobsched/data");
mkdirSync(dataDir, { recursive: true });
const port = Number(process.env.PORT ?? 8787);

let dynamo: Awaited<ReturnType<typeof startDynamo>>;
try {
  dynamo = await startDynamo({ path: dataDir });
} catch (error) {
  console.error(`Could not open ${dataDir}: is another jobsched already running on it? (${String(error)})`);
  process.exit(1);
}
const sqs = await startSqs();

const config = {
  region: "us-east-1",
  tableName: "jobsched-jobs",
  runQueueUrl: "",
  dynamodbEndpoint: dynamo.endpoint,
  sqsEndpoint: sqs.endpoint,
  settings: LOCAL_SETTINGS,
};
await ensureTable(createDynamoClient(config), config.tableName);
const queueUrls = await ensureQueues(createSqsClient(config), "jobsched");
const deps = createSchedulerDeps({ ...config, runQueueUrl: queueUrls.get("runs") ?? "" });

const gateway = await startHttpGateway(
  { api: createApiHandler(deps), internal: createInternalHandler(deps) },
  { port },
).catch((error: unknown) => {
  console.error(`Could not listen on 127.0.0.1:${port} (${String(error)}); set PORT to use another port.`);
  process.exit(1);
});
const ticker = startTicker(deps, LOCAL_SETTINGS.tickSeconds * 1000);
const workerStop = new AbortController();
const worker = runExampleWorker(gateway.url, workerStop.signal);

const inTenSeconds = "$(date -u -d '+10 seconds' +%Y-%m-%dT%H:%M:%SZ)";
console.log(`
jobsched is running (started in ${Date.now() - started} ms)
  API        ${gateway.url}
  DynamoDB   ${dynamo.endpoint}   (dynalite, data in ${dataDir})
  SQS        ${sqs.endpoint}   (fauxqs, in memory)
  tick       every ${LOCAL_SETTINGS.tickSeconds} s; example worker leasing type example.log

Create a job that runs in 10 seconds:
  curl -s -X POST ${gateway.url}/api/v1/jobs -H 'content-type: application/json' \\
    -d "{\\"type\\":\\"example.log\\",\\"payload\\":{\\"hello\\":\\"world\\"},\\"runAt\\":\\"${inTenSeconds}\\"}"

Then: curl -s ${gateway.url}/api/v1/jobs/<jobId>      Stop with Ctrl-C.
`);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping jobsched...`);
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  workerStop.abort();
  await Promise.allSettled([worker, ticker.stop()]);
  gateway.server.closeAllConnections();
  await new Promise((done) => gateway.server.close(done));
  await Promise.allSettled([sqs.close(), dynamo.close()]);
  console.log("stopped.");
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
