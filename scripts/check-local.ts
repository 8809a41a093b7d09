/**
 * Times the local quick start: how long `npm start` takes to come up on an empty data folder,
 * and how late after its `runAt` each of a few one-off jobs is started by the example worker.
 *
 *   npx tsx scripts/check-local.ts [--jobs N] [--ahead SECONDS]
 *
 * Prints the figures and exits non-zero if start-up took 60 s or more or a run started 3 s or
 * more after its time (the walking skeleton's targets).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createJobResponse, jobResponse } from "@jobsched/contract";
import { createSignedFetch } from "@jobsched/worker";
import { loadLocalCredentials } from "../local/local-credentials";
import { startLocalRuntime } from "../local/spawn-runtime";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "10" },
    ahead: { type: "string", default: "10" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log("usage: npx tsx scripts/check-local.ts [--jobs N (default 10)] [--ahead SECONDS (default 10)]");
  process.exit(0);
}
const jobs = Number(values.jobs);
const aheadMs = Number(values.ahead) * 1000;

const dataDir = mkdtempSync(join(tmpdir(), "jobsched-check-"));
const started = Date.now();
const runtime = await startLocalRuntime(dataDir);
const startupMs = Date.now() - started;

const credentials = loadLocalCredentials();
const call = createSignedFetch({
  endpoint: runtime.url,
  region: credentials.region,
  credentials: credentials.first("tenant"),
});

try {
  const ids: string[] = [];
  for (let i = 0; i < jobs; i++) {
    const runAt = new Date(Date.now() + aheadMs + i * 137).toISOString(); // spread over the second
    const response = await call("POST", "/api/v1/jobs", {
      body: { type: "example.log", payload: { i }, runAt },
    });
    ids.push(createJobResponse.parse(response.body).jobId);
  }

  const lateness: number[] = [];
  const deadline = Date.now() + aheadMs + 30_000;
  for (const id of ids) {
    for (;;) {
      const job = jobResponse.parse((await call("GET", `/api/v1/jobs/${id}`)).body);
      const run = job.runs[0];
      // The example worker completes a run as soon as it gets it, so "finished" bounds from
      // above when the worker had it (the lease's startedAt is the due instant by design).
      if (run?.status === "succeeded" && run.finishedAt) {
        lateness.push(Date.parse(run.finishedAt) - Date.parse(run.scheduledFor));
        break;
      }
      if (Date.now() > deadline) throw new Error(`job ${id} did not run in time`);
      await new Promise((done) => setTimeout(done, 250));
    }
  }

  lateness.sort((a, b) => a - b);
  const max = lateness.at(-1) ?? 0;
  const median = lateness[Math.floor(lateness.length / 2)] ?? 0;
  console.log(`start-up:          ${startupMs} ms (target < 60000)`);
  console.log(`runs:              ${lateness.length} one-off jobs, ${aheadMs / 1000} s ahead`);
  console.log(`lateness:          median ${median} ms, max ${max} ms (target < 3000; completed at - due)`);
  console.log(`all lateness (ms): ${lateness.join(" ")}`);
  const ok = startupMs < 60_000 && max < 3_000;
  console.log(ok ? "PASS" : "FAIL");
  process.exitCode = ok ? 0 : 1;
} finally {
  await runtime.kill("SIGTERM");
  rmSync(dataDir, { recursive: true, force: true });
}
