// Runs on Node.js 22, started by scripts/bench-dispatcher-memory.ts with the heap flags
// Lambda's Node.js bootstrap gives a function of its memory size: one dispatcher Lambda
// instance. It imports the synthesized dispatcher bundle (cdk.out) and hands it the push
// queue's messages as the event source does, one batch of up to 10 at a time (an instance runs
// one invocation at a time), deleting what the handler did not report as failed. It samples
// its own resident memory every 10 ms, and sums the CPU time spent inside the handler. When
// told to stop (SIGTERM, or its parent gone: stdin closed) it prints one line, `FIGURES {json}`.
import { randomUUID } from "node:crypto";

const MB = 1024 * 1024;
const TIMEOUT_MS = Number(process.env.JOBSCHED_DISPATCHER_TIMEOUT_MS ?? "60000");
const rssBeforeImport = process.memoryUsage().rss;
let peakRss = rssBeforeImport;
let peakHeap = process.memoryUsage().heapUsed;
const sampler = setInterval(() => {
  const { rss, heapUsed } = process.memoryUsage();
  peakRss = Math.max(peakRss, rss);
  peakHeap = Math.max(peakHeap, heapUsed);
}, 10);
const importStarted = process.cpuUsage();
const { handler } = await import(process.env.JOBSCHED_DISPATCHER_BUNDLE);
const importCpu = process.cpuUsage(importStarted);
const rssAfterImport = process.memoryUsage().rss;
// The harness's own SQS client, loaded after the bundle's import was measured: in AWS the
// event source's pollers run outside the function.
const { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } = await import("@aws-sdk/client-sqs");

const sqs = new SQSClient({
  region: "us-east-1",
  endpoint: process.env.SQS_ENDPOINT,
  credentials: { accessKeyId: "local", secretAccessKey: "local" },
});
const queueUrl = process.env.PUSH_QUEUE_URL;
const figures = {
  invocations: 0,
  records: 0,
  handlerCpuMs: 0,
  firstInvocationCpuMs: 0,
  handlerWallMs: 0,
  deleteFailures: 0,
};
let stopping = false;
const stop = () => {
  stopping = true;
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();

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
  const cpu = process.cpuUsage();
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
      memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? "256",
      awsRequestId: randomUUID(),
      logGroupName: "/aws/lambda/dispatcher",
      logStreamName: "memory-bench",
      getRemainingTimeInMillis: () => Math.max(0, TIMEOUT_MS - (Date.now() - begun)),
    },
  );
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  if (figures.invocations === 0) figures.firstInvocationCpuMs = cpuMs;
  figures.handlerCpuMs += cpuMs;
  figures.handlerWallMs += Date.now() - begun;
  figures.invocations += 1;
  figures.records += Messages.length;
  const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  const done = Messages.filter((m) => !failed.has(m.MessageId));
  if (done.length > 0) {
    const answer = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
    figures.deleteFailures += answer.Failed?.length ?? 0;
  }
}
clearInterval(sampler);
console.log(
  `FIGURES ${JSON.stringify({
    node: process.version,
    memoryMb: Number(process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? "0"),
    rssBeforeImportMb: rssBeforeImport / MB,
    rssAfterImportMb: rssAfterImport / MB,
    importCpuMs: (importCpu.user + importCpu.system) / 1000,
    peakRssMb: Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / MB,
    peakHeapMb: peakHeap / MB,
    ...figures,
  })}`,
);
process.exit(0);
