import { createServer, type Server } from "node:http";
import { CreateQueueCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { Webhook } from "standardwebhooks";

/** Where `npm start`'s example push targets are. */
export const EXAMPLE_WEBHOOK_PORT = 8791;
export const EXAMPLE_FUNCTION_ARN = "arn:aws:lambda:us-east-1:000000000000:function:example-reminder";
export const EXAMPLE_QUEUE_NAME = "jobsched-example-target";
export const EXAMPLE_ROLE_ARN = "arn:aws:iam::000000000000:role/jobsched-target-example";

/**
 * An example webhook receiver on 127.0.0.1: it checks each delivery's Standard Webhooks
 * signature with the tenant's secret (the `standardwebhooks` library, not jobsched's code),
 * prints a line per run, and answers 204 (401 to a bad signature).
 */
export async function startExampleReceiver(
  secretsOf: () => Promise<readonly string[]>,
  port = EXAMPLE_WEBHOOK_PORT,
): Promise<Server | undefined> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
        );
        const verified = (await secretsOf()).some((secret) => {
          try {
            new Webhook(secret).verify(body, headers);
            return true;
          } catch {
            return false;
          }
        });
        const envelope = JSON.parse(body || "{}") as { runKey?: string; fence?: number };
        console.log(
          `example webhook: run ${envelope.runKey} (fence ${envelope.fence}) signature ${verified ? "verified" : "NOT verified"}`,
        );
        response.writeHead(verified ? 204 : 401).end();
      })();
    });
  });
  return new Promise((resolve) => {
    server.once("error", () => resolve(undefined)); // the port is taken: no example receiver
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

/** The example `sqs` target: a queue on the SQS emulator. */
export async function createExampleQueue(sqs: SQSClient): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: EXAMPLE_QUEUE_NAME }));
  return QueueUrl ?? "";
}
