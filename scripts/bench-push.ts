/**
 * bench-push: webhook runs due in the same second, pushed by the dispatcher (issue 17), and
 * with `--flood` one tenant's flood beside another's few runs (issue 27, decision 0039).
 * The local stack (dynalite, fauxqs with its fair-queue stand-in, the real use cases, the real
 * dispatcher handler behind a local event source that scales as Lambda's does) sweeps them as
 * the first tick that sees them would, and the dispatcher POSTs each to a receiver on
 * 127.0.0.1 that checks every signature with the `standardwebhooks` library and notes when each
 * run arrived.
 *
 *   npm run bench:push -- [--jobs 1000] [--ahead 60] [--concurrency 10] [--receiver-ms 0] [--p99-ms 1000]
 *   npm run bench:push -- --flood [--a 5000] [--b 100] [--b-after 0] [--a-receiver-ms 5000] [--a-concurrency 100] [--ahead 120] [--p99-ms 1000]
 *
 * Default: `--jobs` runs of one tenant. Prints lateness at the receiver (arrived - scheduled for)
 * p50/p95/p99/max, duplicates, bad signatures and the drain time. Exits non-zero if a run did not
 * arrive exactly once with a good signature, or p99 is over `--p99-ms` (default 1,000 ms).
 *
 * `--flood`: tenant A has `--a` runs due in one second at an endpoint that answers after
 * `--a-receiver-ms`, tenant B `--b` runs due in the same second (or `--b-after` seconds later,
 * when A's deliveries are under way) at one that answers at once.
 * Prints B's lateness at its receiver and what A got through meanwhile; exits non-zero if one
 * of B's runs did not arrive exactly once with a good signature, or B's p99 is over `--p99-ms`.
 */
import "../local/runtime-env";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { Webhook } from "standardwebhooks";
import { createDocumentClient, createSqsClient } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import type { Job } from "../lambdas/core/job";
import type { Target } from "../lambdas/core/target";
import { CLOUD_SETTINGS, LOCAL_SETTINGS } from "../lambdas/definitions/settings";
import { startLocalDispatcher } from "../local/dispatcher";
import { LocalFunctions } from "../local/local-functions";
import { startWebhookReceiver } from "../test/support/webhook-receiver";
import { storeWebhookSecret } from "../test/support/webhook-secret";
import { oneOffJob, percentile, putJobs, startBenchStack, tickAhead } from "./bench-support";
import { atMost, type Check, exactly, reportVerdict } from "./bench-verdict";

const USAGE = [
  "usage: npm run bench:push -- [--jobs 1000] [--ahead 60] [--concurrency 10] [--receiver-ms 0] [--p99-ms 1000]",
  "       npm run bench:push -- --flood [--a 5000] [--b 100] [--b-after 0] [--a-receiver-ms 5000] [--a-concurrency 100] [--ahead 120] [--p99-ms 1000]",
].join("\n");

const { values } = parseArgs({
  options: {
    flood: { type: "boolean" },
    jobs: { type: "string", default: "1000" },
    a: { type: "string", default: "5000" },
    b: { type: "string", default: "100" },
    "b-after": { type: "string", default: "0" },
    ahead: { type: "string" },
    concurrency: { type: "string", default: "10" },
    "a-concurrency": { type: "string", default: "100" },
    "receiver-ms": { type: "string", default: "0" },
    "a-receiver-ms": { type: "string", default: "5000" },
    "p99-ms": { type: "string", default: "1000" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

/** One tenant's part of the bench: its runs, its endpoint, its secret, what its receiver saw. */
interface Party {
  readonly tenant: string;
  readonly path: string;
  readonly runs: number;
  /** The second its runs are due. */
  readonly dueAt: number;
  readonly target: Target;
  readonly receiverMs: number;
  readonly secret: string;
  readonly arrivals: Map<string, number[]>;
  badSignatures: number;
}

const flood = values.flood === true;
const ahead = Number(values.ahead ?? (flood ? 120 : 60));
const secretOf = (tenant: string) =>
  `whsec_${Buffer.from(`bench-push-secret-${tenant}`.padEnd(32, "!").slice(0, 32)).toString("base64")}`;

// The receiver: every delivery's signature checked by an independent implementation with the
// secret of the tenant whose path it came to.
const parties = new Map<string, Party>();
const receiver = await startWebhookReceiver(async ({ body, headers, path }) => {
  const party = parties.get(path);
  const at = Date.now();
  if (!party) return 404;
  try {
    new Webhook(party.secret).verify(body, headers);
  } catch {
    party.badSignatures++;
  }
  const { runKey } = JSON.parse(body) as { runKey: string };
  party.arrivals.set(runKey, [...(party.arrivals.get(runKey) ?? []), at]);
  await new Promise((done) => setTimeout(done, party.receiverMs));
  return 204;
});
const dueAt = Math.ceil((Date.now() + ahead * 1000) / 1000) * 1000;
const party = (
  tenant: string,
  path: string,
  runs: number,
  concurrency: number,
  receiverMs: number,
  due = dueAt,
): Party => {
  const made: Party = {
    tenant,
    path,
    runs,
    dueAt: due,
    // The endpoint's own answer time plus a margin, at most the 30 s a target may wait.
    target: {
      kind: "https",
      url: `${receiver.url}${path}`,
      timeoutSeconds: Math.min(30, Math.ceil(receiverMs / 1000) + 5),
      concurrency,
    },
    receiverMs,
    secret: secretOf(tenant),
    arrivals: new Map(),
    badSignatures: 0,
  };
  parties.set(path, made);
  return made;
};
const [subject, ...others] = flood
  ? [
      party("bench-tenant-b", "/b", Number(values.b), 10, 0, dueAt + Number(values["b-after"]) * 1000),
      party(
        "bench-tenant-a",
        "/a",
        Number(values.a),
        Number(values["a-concurrency"]),
        Number(values["a-receiver-ms"]),
      ),
    ]
  : [
      party(
        "bench-tenant",
        "/hook",
        Number(values.jobs),
        Number(values.concurrency),
        Number(values["receiver-ms"]),
      ),
    ];
if (!subject) throw new Error("no tenant to measure");
const everyone = [subject, ...others];
const total = everyone.reduce((sum, p) => sum + p.runs, 0);

// Cloud timings, with the lease rate this machine grants and private targets allowed (the
// receiver is on loopback).
const stack = await startBenchStack("bench-push", {
  settings: { ...CLOUD_SETTINGS, leasesPerSecond: LOCAL_SETTINGS.leasesPerSecond, allowPrivateTargets: 1 },
});
const { config } = stack;
const deps = createSchedulerDeps(config);
for (const p of everyone) await storeWebhookSecret(deps.webhookSecrets, p.tenant, p.secret);
const dispatcher = startLocalDispatcher(
  // The dispatcher has its own clients, as its Lambda would.
  createSchedulerDeps(config),
  createSqsClient(config),
  config.pushQueueUrl,
  new LocalFunctions(new Map()),
  config.sqsEndpoint ?? "",
);

// The tenants' jobs interleaved, as a sweep meets them (its shards mix tenants anyway).
const jobs: Job[] = [];
for (let i = 0; jobs.length < total; i++) {
  for (const p of everyone) {
    if (i < p.runs) jobs.push({ ...oneOffJob(p.dueAt, Date.now(), "@https", p.tenant), target: p.target });
  }
}
await putJobs(createDocumentClient(config), config.tableName, jobs);
console.log(
  `${everyone.map((p) => `${p.runs} webhook jobs of ${p.tenant} (endpoint answers after ${p.receiverMs} ms, concurrency ${p.target.kind === "https" ? p.target.concurrency : "-"})`).join(", ")}, due at ${new Date(dueAt).toISOString()}${subject.dueAt === dueAt ? "" : ` (${subject.tenant}'s ${(subject.dueAt - dueAt) / 1000} s later)`}`,
);
// The first tick that sees each second (B's, later, may need a tick of its own).
for (const due of [...new Set(everyone.map((p) => p.dueAt))].sort((a, b) => a - b))
  await tickAhead(deps, due);

// Until every run of the measured tenant arrived (and, without a flood, everyone's).
const deadline = subject.dueAt + 60_000;
while (subject.arrivals.size < subject.runs && Date.now() < deadline)
  await new Promise((d) => setTimeout(d, 100));
const drainedAt = Date.now();
// A little longer, to see a duplicate that would come late.
await new Promise((d) => setTimeout(d, 3_000));
const othersAtDrain = others.map((p) => ({
  party: p,
  arrived: [...p.arrivals.values()].map((t) => t[0] ?? 0),
}));
const stopping = Date.now();
await dispatcher.stop();
const stopSeconds = (Date.now() - stopping) / 1000;
receiver.close();
// When each run's lease was granted, from the run records (a scan: a bench's table is small).
const leasedAhead: number[] = [];
for (let start: Record<string, unknown> | undefined; ; ) {
  const page = await createDocumentClient(config).send(
    new ScanCommand({ TableName: config.tableName, ExclusiveStartKey: start }),
  );
  for (const item of page.Items ?? []) {
    if (
      item.tenant === subject.tenant &&
      typeof item.startedAt === "number" &&
      typeof item.scheduledFor === "number"
    ) {
      leasedAhead.push(item.scheduledFor - item.startedAt);
    }
  }
  start = page.LastEvaluatedKey;
  if (!start) break;
}
await stack.close();

const latenessOf = (p: Party) =>
  [...p.arrivals.values()].map((times) => (times[0] ?? 0) - p.dueAt).sort((a, b) => a - b);
const duplicatesOf = (p: Party) => [...p.arrivals.values()].reduce((sum, times) => sum + times.length - 1, 0);
const lateness = latenessOf(subject);
const [p50, p95, p99] = [50, 95, 99].map((p) => percentile(lateness, p));
console.log(`machine: ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} cores`);
const who = flood ? `${subject.tenant} ` : "";
console.log(
  `${who}received: ${subject.arrivals.size}/${subject.runs}, duplicates ${duplicatesOf(subject)}, bad signatures ${subject.badSignatures}, target concurrency ${subject.target.kind === "https" ? subject.target.concurrency : "-"}`,
);
console.log(
  `${who}lateness at the receiver ms: p50 ${p50} p95 ${p95} p99 ${p99} max ${lateness.at(-1)} (min ${lateness[0]})`,
);
console.log(`${who}drained ${((drainedAt - subject.dueAt) / 1000).toFixed(1)} s after the second`);
const leadTimes = leasedAhead.sort((a, b) => a - b);
console.log(
  `${who}leased ahead of the second ms: min ${leadTimes[0]} p50 ${percentile(leadTimes, 50)} max ${leadTimes.at(-1)} (negative: after it)`,
);
for (const { party: p, arrived } of othersAtDrain) {
  const late = arrived.map((at) => at - p.dueAt).sort((a, b) => a - b);
  console.log(
    `${p.tenant} (the flood) by then: received ${arrived.length}/${p.runs}, lateness ms p50 ${percentile(late, 50)} max ${late.at(-1)}; duplicates ${duplicatesOf(p)}, bad signatures ${p.badSignatures}; the dispatcher took ${stopSeconds.toFixed(1)} s to stop (deliveries in flight)`,
  );
}
const checks: Check[] = [
  exactly(`${who}runs received`, subject.arrivals.size, subject.runs),
  exactly(`${who}duplicate deliveries`, duplicatesOf(subject), 0),
  exactly(
    "bad signatures",
    everyone.reduce((sum, p) => sum + p.badSignatures, 0),
    0,
  ),
  atMost(`${who}lateness p99 ms at the receiver`, p99 ?? Number.NaN, Number(values["p99-ms"])),
];
process.exit(reportVerdict(checks));
