import "./runtime-env";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { createDynamoClient, createSqsClient, documentClientOf } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import { signingSecretsOf } from "../lambdas/core/use-cases/webhook-secrets";
import {
  envNameOf,
  LOCAL_SETTINGS,
  type SchedulerSettings,
  settingsFrom,
} from "../lambdas/definitions/settings";
import { createApiHandler } from "../lambdas/handlers/api";
import { tenantOfPrincipal } from "../lambdas/handlers/http/request";
import { createInternalHandler } from "../lambdas/handlers/internal";
import { createSweepHandler } from "../lambdas/handlers/sweep";
import { awsFaultsFromEnvironment } from "./aws-fault-env";
import { type AwsFaultSettings, awsFaultPlugin } from "./aws-faults";
import { bootstrapStack } from "./bootstrap";
import { lockDataDir } from "./data-lock";
import { startLocalDispatcher } from "./dispatcher";
import { startDynamo, startSqs } from "./emulators";
import {
  createExampleQueue,
  EXAMPLE_FUNCTION_ARN,
  EXAMPLE_ROLE_ARN,
  EXAMPLE_WEBHOOK_PORT,
  startExampleReceiver,
} from "./example-targets";
import { runExampleWorker } from "./example-worker";
import { startHttpGateway } from "./http-gateway";
import { type LocalCredentials, loadLocalCredentials, widestWorker } from "./local-credentials";
import { DEFAULT_FUNCTIONS_FILE, LocalFunctions } from "./local-functions";
import { withSqsLimits } from "./sqs-aws-limits";
import { startSqsEventSource } from "./sqs-event-source";
import { withSqsJournal } from "./sqs-journal";
import { startTicker } from "./ticker";

/**
 * `npm start`: the whole of jobsched on one machine. The emulators and the Lambda handlers run
 * in this process; job data lives in .jobsched/ and survives restarts.
 */
const started = Date.now();
const dataDir = resolve(process.env.JOBSCHED_DATA_DIR ?? ".jobsched/data");
mkdirSync(dataDir, { recursive: true });
const port = Number(process.env.PORT ?? 8787);

// The credentials file holds the worker bindings: a file that is not valid stops the start.
let credentials: LocalCredentials;
let lock: ReturnType<typeof lockDataDir>;
// Chaos testing only: a share of DynamoDB and SQS requests failing as AWS fails them (decision 0038).
let faults: AwsFaultSettings | undefined;
try {
  credentials = loadLocalCredentials();
  faults = awsFaultsFromEnvironment(process.env);
  lock = lockDataDir(dataDir);
} catch (error) {
  console.error(`jobsched: ${(error as Error).message}`);
  process.exit(1);
}
const dynamo = await startDynamo({ path: dataDir, rebuildIndexes: lock.unclean });
const sqs = await startSqs();

const config = await bootstrapStack({
  dynamodbEndpoint: dynamo.endpoint,
  sqsEndpoint: sqs.endpoint,
  tableName: "jobsched-jobs",
  queuePrefix: "jobsched",
  settings: localSettings(),
});
// SQS held to AWS's own limits, which the emulator does not all enforce.
const sqsClient = withSqsLimits(createSqsClient(config));
// The emulator keeps messages in memory only: a journal beside the data keeps them across
// restarts, as SQS would (decision 0051). Restored before faults are injected into the client.
const restoredMessages = await withSqsJournal(sqsClient, join(dataDir, "sqs-journal.jsonl")).restore();
const dynamoClient = createDynamoClient(config);
if (faults) {
  sqsClient.middlewareStack.use(awsFaultPlugin("sqs", faults));
  dynamoClient.middlewareStack.use(awsFaultPlugin("dynamodb", faults));
}
const deps = createSchedulerDeps(
  { ...config, workerBindings: credentials.workerBindings },
  documentClientOf(dynamoClient),
  sqsClient,
);

const gateway = await startHttpGateway(
  { api: createApiHandler(deps), internal: createInternalHandler(deps) },
  { port, credentials },
).catch((error: unknown) => {
  console.error(`Could not listen on 127.0.0.1:${port} (${String(error)}); set PORT to use another port.`);
  process.exit(1);
});
const ticker = startTicker(deps, config.settings.tickSeconds * 1000);
// The sweeper Lambda's SQS event source: groups of shards swept as their messages arrive.
const sweeper = startSqsEventSource(sqsClient, config.sweepQueueUrl, createSweepHandler(deps), {
  batchSize: 4,
  concurrency: 2,
  onError: (error) => deps.log.error("sweep poll failed", { error: String(error) }),
});
// The dispatcher Lambda's event source: push runs (jobs with a target) delivered as they come due.
let functions: LocalFunctions;
const functionsFile = process.env.JOBSCHED_FUNCTIONS_FILE ?? DEFAULT_FUNCTIONS_FILE;
try {
  functions = LocalFunctions.fromFile(functionsFile);
} catch (error) {
  console.error(`jobsched: ${(error as Error).message}`);
  process.exit(1);
}
const dispatcher = startLocalDispatcher(deps, sqsClient, config.pushQueueUrl, functions, sqs.endpoint);
const workerStop = new AbortController();
const exampleWorker = widestWorker(credentials);
const worker = runExampleWorker(gateway.url, exampleWorker, credentials.region, workerStop.signal);
const tenant = credentials.first("tenant");
// Example push targets: a webhook receiver, a queue, and the function in the functions file.
const receiver = await startExampleReceiver(async () => {
  const secret = await deps.webhookSecrets.get(tenantOfPrincipal(tenant.principal));
  return secret ? signingSecretsOf(secret, Date.now()) : [];
});
const exampleQueueUrl = await createExampleQueue(sqsClient);

const inTenSeconds = "$(date -u -d '+10 seconds' +%Y-%m-%dT%H:%M:%SZ)";
const sign = `--aws-sigv4 "aws:amz:${credentials.region}:execute-api" --user ${tenant.accessKeyId}:${tenant.secretAccessKey}`;
console.log(`
jobsched is running (started in ${Date.now() - started} ms${lock.unclean ? "; last stop was unclean: indexes rebuilt" : ""})
  API        ${gateway.url}   (SigV4; dev keys in local/credentials.json)
  DynamoDB   ${dynamo.endpoint}   (dynalite, data in ${dataDir})
  SQS        ${sqs.endpoint}   (fauxqs; messages journaled in ${dataDir}, ${restoredMessages} restored)${
    faults
      ? `\n  faults     ${faults.rate * 100}% of DynamoDB and SQS requests fail as AWS fails them (JOBSCHED_FAULT_RATE)`
      : ""
  }
  tick       every ${LOCAL_SETTINGS.tickSeconds} s; example worker leasing type example.log
             as ${exampleWorker.principal} (serves ${exampleWorker.kind === "worker" ? exampleWorker.tenants.length : 0} tenants)

Create a job that runs in 10 seconds (as ${tenant.principal}):
  curl -s ${sign} \\
    -H 'content-type: application/json' -X POST ${gateway.url}/api/v1/jobs \\
    -d "{\\"type\\":\\"example.log\\",\\"payload\\":{\\"hello\\":\\"world\\"},\\"runAt\\":\\"${inTenSeconds}\\"}"

Then: curl -s ${sign} ${gateway.url}/api/v1/jobs/<jobId>      Stop with Ctrl-C.

Push jobs: no worker, the dispatcher calls the target (README, "Push delivery").
  webhook: create the signing secret once (shown once), then the job; the example receiver on
  127.0.0.1:${EXAMPLE_WEBHOOK_PORT}${receiver ? "" : " (port taken: not started)"} checks each delivery's signature:
    curl -s ${sign} -X POST ${gateway.url}/api/v1/webhook-secret
    curl -s ${sign} -H 'content-type: application/json' -X POST ${gateway.url}/api/v1/jobs \\
      -d "{\\"target\\":{\\"kind\\":\\"https\\",\\"url\\":\\"http://127.0.0.1:${EXAMPLE_WEBHOOK_PORT}/hook\\"},\\"runAt\\":\\"${inTenSeconds}\\"}"
  function (registered in ${functionsFile}):
    curl -s ${sign} -H 'content-type: application/json' -X POST ${gateway.url}/api/v1/jobs \\
      -d "{\\"target\\":{\\"kind\\":\\"lambda\\",\\"functionArn\\":\\"${EXAMPLE_FUNCTION_ARN}\\",\\"roleArn\\":\\"${EXAMPLE_ROLE_ARN}\\"},\\"runAt\\":\\"${inTenSeconds}\\"}"
  queue (on the SQS emulator):
    curl -s ${sign} -H 'content-type: application/json' -X POST ${gateway.url}/api/v1/jobs \\
      -d "{\\"target\\":{\\"kind\\":\\"sqs\\",\\"queueUrl\\":\\"${exampleQueueUrl}\\",\\"roleArn\\":\\"${EXAMPLE_ROLE_ARN}\\"},\\"runAt\\":\\"${inTenSeconds}\\"}"

Web console (on http://127.0.0.1:8790: open the link it prints; its calls signed with the same dev keys):
  AWS_ACCESS_KEY_ID=${tenant.accessKeyId} AWS_SECRET_ACCESS_KEY=${tenant.secretAccessKey} \\
    npx jobsched console --endpoint ${gateway.url} --region ${credentials.region}
`);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping jobsched...`);
  const force = setTimeout(() => process.exit(1), 10_000);
  force.unref();
  workerStop.abort();
  await Promise.allSettled([worker, ticker.stop(), sweeper.stop(), dispatcher.stop()]);
  receiver?.close();
  gateway.server.closeAllConnections();
  await new Promise((done) => gateway.server.close(done));
  await Promise.allSettled([sqs.close(), dynamo.close()]);
  lock.release();
  console.log("stopped.");
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));

/**
 * The local settings: LOCAL_SETTINGS, each overridden by its environment variable as the Lambdas
 * read it (TENANT_MAX_JOB_TYPES, IDLE_LANE_DAYS, LEASE_SECONDS...), through the same schema.
 */
function localSettings(): SchedulerSettings {
  try {
    return settingsFrom((key) => process.env[envNameOf(key)], LOCAL_SETTINGS, envNameOf);
  } catch (error) {
    console.error(`jobsched: ${(error as Error).message}`);
    process.exit(2);
  }
}
