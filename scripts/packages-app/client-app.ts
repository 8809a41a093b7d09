// A service calling jobsched, as someone who installed the packed @jobsched/client writes it in
// TypeScript: create a job, read it back typed, handle a typed error. scripts/test-packages.ts
// type-checks it against the installed package (tsc, strict) and runs what tsc wrote.
import { createClient, type JobResponse, NotFoundError } from "@jobsched/client";

const client = createClient({
  endpoint: process.env.JOBSCHED_ENDPOINT ?? "http://127.0.0.1:8787",
  // The local runtime's development keys (local/credentials.json): loopback only, not secrets.
  credentials: { accessKeyId: "AKIAJOBSCHEDTENANTA1", secretAccessKey: "local-dev-secret-tenant-a" },
});

const { jobId } = await client.createJob({
  type: "send-reminder",
  cron: "0 9 * * MON-FRI",
  timeZone: "Europe/London",
  labels: { from: "packed-client" },
});
const job: JobResponse = await client.getJob(jobId);
const nextRun: string | undefined = job.nextRunAt;
if (job.labels.from !== "packed-client" || job.cron !== "0 9 * * MON-FRI" || nextRun === undefined)
  throw new Error(`read back something else: ${JSON.stringify(job)}`);
try {
  await client.getJob("j_00000000000000000000");
  throw new Error("a job that does not exist was found");
} catch (error) {
  if (!(error instanceof NotFoundError)) throw error;
}
console.log(
  `ok: job ${jobId} created and read back typed through the packed @jobsched/client (next run ${nextRun})`,
);
