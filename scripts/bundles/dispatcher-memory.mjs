// Runs on Node.js 22, started by scripts/bench-dispatcher-memory.ts: one dispatcher Lambda
// instance. It imports the synthesized dispatcher bundle (cdk.out) and hands it the push
// queue's messages as the event source does, one batch of up to 10 at a time (an instance runs
// one invocation at a time), deleting what the handler did not report as failed. It samples
// its own resident memory every 10 ms and, when told to stop (SIGTERM), prints one JSON line:
// memory after the bundle's import, the peak, CPU time, invocations and records handled.
import { randomUUID } from "node:crypto";
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";

const MB = 1024 * 1024;
const TIMEOUT_MS = Number(process.env.JOBSCHED_DISPATCHER_TIMEOUT_MS ?? "60000");
const started = process.cpuUsage();
let peakRss = process.memoryUsage().rss;
let peakHeap = process.memoryUsage().heapUsed;
const sampler = setInterval(() => {
  const { rss, heapUsed } = process.memoryUsage();
  peakRss = Math.max(peakRss, rss);
  peakHeap = Math.max(peakHeap, heapUsed);
}, 10);
const beforeImport = process.memoryUsage().rss;
const { handler } = await import(process.env.JOBSCHED_DISPATCHER_BUNDLE);
const init = { rss: process.memoryUsage().rss, cpu: process.cpuUsage(started) };

const sqs = new SQSClient({
  region: "us-east-1",
  endpoint: process.env.SQS_ENDPOINT,
  credentials: { accessKeyId: "local", secretAccessKey: "local" },
});
const queueUrl = process.env.PUSH_QUEUE_URL;
let invocations = 0;
let records = 0;
let busyMs = 0;
let stopping = false;

process.on("SIGTERM", () => {
  stopping = true;
});

while (!stopping) {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageSystemAttributeNames: ["ApproximateReceiveCount"],
    }),
  );
  if (Messages.length === 0) continue;
  const begun = Date.now();
  const result = await handler(
    {
      Records: Messages.map((m) => ({
        messageId: m.MessageId,
        receiptHandle: m.ReceiptHandle,
        body: m.Body,
        attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1" },
        messageAttributes: {},
        md5OfBody: m.MD5OfBody ?? "",
        eventSource: "aws:sqs",
        eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:push",
        awsRegion: "us-east-1",
      })),
    },
    {
      callbackWaitsForEmptyEventLoop: false,
      functionName: "dispatcher",
      functionVersion: "$LATEST",
      invokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:dispatcher",
      memoryLimitInMB: process.env.JOBSCHED_MEMORY_MB ?? "256",
      awsRequestId: randomUUID(),
      logGroupName: "/aws/lambda/dispatcher",
      logStreamName: "memory-bench",
      getRemainingTimeInMillis: () => Math.max(0, TIMEOUT_MS - (Date.now() - begun)),
    },
  );
  busyMs += Date.now() - begun;
  invocations += 1;
  records += Messages.length;
  const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  const done = Messages.filter((m) => !failed.has(m.MessageId));
  if (done.length > 0) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
  }
}
clearInterval(sampler);
const cpu = process.cpuUsage(started);
console.log(
  JSON.stringify({
    node: process.version,
    rssBeforeImportMb: beforeImport / MB,
    rssAfterInitMb: init.rss / MB,
    initCpuMs: (init.cpu.user + init.cpu.system) / 1000,
    peakRssMb: peakRss / MB,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    peakHeapMb: peakHeap / MB,
    cpuMs: (cpu.user + cpu.system) / 1000,
    invocations,
    records,
    busyMs,
  }),
);
process.exit(0);
