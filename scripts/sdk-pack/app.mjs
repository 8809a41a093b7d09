// A user's worker, as someone who installed the packed @jobsched/worker tarball writes it: a
// tenant schedules a one-off job, a worker runs it, the job reads back completed. Started by
// scripts/test-sdk-pack.ts in a folder of its own; the endpoint comes from JOBSCHED_ENDPOINT.
import { createSignedFetch, createWorker } from "@jobsched/worker";

const endpoint = process.env.JOBSCHED_ENDPOINT;
const region = "us-east-1";
// The local runtime's development keys (local/credentials.json): loopback only, not secrets.
const tenant = createSignedFetch({
  endpoint,
  region,
  credentials: { accessKeyId: "AKIAJOBSCHEDTENANTA1", secretAccessKey: "local-dev-secret-tenant-a" },
});

const created = await tenant("POST", "/api/v1/jobs", {
  body: { type: "packed", runAt: new Date(Date.now() + 1_000).toISOString(), payload: { from: "tarball" } },
});
if (created.status !== 201)
  throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
const { jobId } = created.body;

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
  job = (await tenant("GET", `/api/v1/jobs/${jobId}`)).body;
  if (job.status === "completed") break;
}
await worker.close();
if (job?.status !== "completed" || seen?.from !== "tarball") {
  throw new Error(`the job did not complete through the packed SDK: ${JSON.stringify({ job, seen })}`);
}
console.log(`ok: job ${jobId} ran through the packed @jobsched/worker and completed`);
