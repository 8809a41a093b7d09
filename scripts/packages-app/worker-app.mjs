// A user's worker, as someone who installed the packed tarballs writes it: a tenant schedules a
// one-off job with @jobsched/client, a @jobsched/worker worker runs it, the job reads back
// completed. Started by scripts/test-packages.ts in a folder of its own; the endpoint comes
// from JOBSCHED_ENDPOINT.
import { createClient } from "@jobsched/client";
import { createWorker } from "@jobsched/worker";

const endpoint = process.env.JOBSCHED_ENDPOINT;
const region = "us-east-1";
// The local runtime's development keys (local/credentials.json): loopback only, not secrets.
const tenant = createClient({
  endpoint,
  region,
  credentials: { accessKeyId: "AKIAJOBSCHEDTENANTA1", secretAccessKey: "local-dev-secret-tenant-a" },
});

const { jobId } = await tenant.createJob({
  type: "packed",
  runAt: new Date(Date.now() + 1_000).toISOString(),
  payload: { from: "tarball" },
});

let seen;
const worker = createWorker({
  endpoint,
  region,
  credentials: { accessKeyId: "AKIAJOBSCHEDWORKER01", secretAccessKey: "local-dev-secret-worker" },
  types: ["packed"],
  stopOnSignals: false,
  log: () => undefined,
  handler: async (run) => {
    seen = run.payload;
  },
});

let job;
for (let i = 0; i < 60; i++) {
  await new Promise((done) => setTimeout(done, 500));
  job = await tenant.getJob(jobId);
  if (job.status === "completed") break;
}
await worker.close();
if (job?.status !== "completed" || seen?.from !== "tarball") {
  throw new Error(`the job did not complete through the packed SDK: ${JSON.stringify({ job, seen })}`);
}
console.log(`ok: job ${jobId} ran through the packed @jobsched/worker and completed`);
