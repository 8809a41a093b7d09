import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { HandlerDeps } from "../lambdas/adapters/scheduler-deps";
import { tenantOfPrincipal } from "../lambdas/handlers/http/request";
import { startLocalDispatcher } from "../local/dispatcher";
import { LocalFunctions } from "../local/local-functions";
import { startWebhookReceiver } from "../test/support/webhook-receiver";
import { storeWebhookSecret } from "../test/support/webhook-secret";

const sleep = (ms: number) => new Promise((done) => setTimeout(done, Math.max(0, ms)));

/**
 * Push: a webhook receiver and a local function with the same failure mix (a retried tenth
 * fails its first attempt; a slow twentieth takes 7 s), and the dispatcher on the push queue.
 */
export async function startPushTargets(env: {
  readonly outcomes: { succeeded: number; failedOnce: number; heartbeatRuns: number };
  readonly deps: HandlerDeps;
  readonly tenantPrincipal: string;
  readonly pushPollingClient: SQSClient;
  readonly pushQueueUrl: string;
  readonly sqsEndpoint: string;
  /** Wraps the dispatcher's handler so its invocations are metered. */
  readonly meter: <A extends unknown[], R>(handler: (...args: A) => Promise<R>) => (...args: A) => Promise<R>;
}) {
  const { outcomes, deps } = env;
  const react = async (envelope: { attempt: number; payload: { mode?: string } }): Promise<boolean> => {
    const mode = envelope.payload?.mode ?? "ok";
    if (mode === "retry-once" && envelope.attempt === 1) {
      outcomes.failedOnce += 1;
      return false;
    }
    if (mode === "heartbeat") {
      outcomes.heartbeatRuns += 1;
      await sleep(7_000);
    }
    outcomes.succeeded += 1;
    return true;
  };
  const receiver = await startWebhookReceiver(async ({ body }) =>
    (await react(JSON.parse(body))) ? 204 : 503,
  );
  const functionArn = "arn:aws:lambda:us-east-1:000000000000:function:cost-bench";
  const folder = mkdtempSync(join(tmpdir(), "jobsched-cost-"));
  writeFileSync(
    join(folder, "target.mjs"),
    "export async function handler(envelope) { if (!(await globalThis.costBenchReact(envelope))) throw new Error('transient'); }\n",
  );
  (globalThis as { costBenchReact?: typeof react }).costBenchReact = react;
  const tenantName = tenantOfPrincipal(env.tenantPrincipal);
  await storeWebhookSecret(
    deps.webhookSecrets,
    tenantName,
    `whsec_${Buffer.from("cost-bench-secret-32-bytes-long!").toString("base64")}`,
  );
  const dispatcher = startLocalDispatcher(
    deps,
    env.pushPollingClient,
    env.pushQueueUrl,
    new LocalFunctions(new Map([[functionArn, join(folder, "target.mjs")]])),
    env.sqsEndpoint,
    (handler) => env.meter(handler),
  );
  return {
    webhook: { kind: "https", url: `${receiver.url}/hook` },
    function: {
      kind: "lambda",
      functionArn,
      roleArn: "arn:aws:iam::000000000000:role/jobsched-target-cost-bench",
    },
    async stop() {
      await dispatcher.stop();
      receiver.close();
    },
  };
}
