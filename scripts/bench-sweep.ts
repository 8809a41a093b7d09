/**
 * bench-sweep: does the read capacity of a tick depend on how many jobs are stored, or only on
 * how many are due? Two fresh tables on in-process dynalite and fauxqs: one holds the 1,000 jobs
 * due in the next minute, the other the same plus 100,000 jobs due over the coming week. One
 * tick (all 32 shard groups swept, as the fan-out does) runs on each; a client middleware adds
 * up the read units every call consumes by DynamoDB's rules (capacity-meter.ts: every Query is
 * at least 0.5 RRU even when it returns nothing, which the emulator reports as 0).
 *
 *   npx tsx scripts/bench-sweep.ts [--stored 100000] [--due 1000] [--max-ratio 1.2]
 *
 * Prints both figures and their ratio; exits non-zero when the ratio is above `--max-ratio`
 * (1.2, issue 5's target), or so is the ratio of what the items read cost beyond each query's
 * 0.5-RRU minimum (the minimum is the same in both ticks and would hide a growing backlog read),
 * or either tick created other than one run per due job.
 */
import "../local/runtime-env";
import { parseArgs } from "node:util";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { createDynamoClient } from "../lambdas/adapters/clients";
import { meterCapacity } from "../lambdas/adapters/dynamo/capacity-meter";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import { CLOUD_SETTINGS } from "../lambdas/definitions/settings";
import { bootstrapStack } from "../local/bootstrap";
import { startDynamo, startSqs } from "../local/emulators";
import { oneOffJob, putJobs, sweepEveryGroup } from "./bench-support";
import { atMost, exactly, reportVerdict } from "./bench-verdict";

const { values } = parseArgs({
  options: {
    stored: { type: "string", default: "100000" },
    due: { type: "string", default: "1000" },
    "max-ratio": { type: "string", default: "1.2" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log("usage: npx tsx scripts/bench-sweep.ts [--stored 100000] [--due 1000] [--max-ratio 1.2]");
  process.exit(0);
}
const stored = Number(values.stored);
const due = Number(values.due);
const maxRatio = Number(values["max-ratio"]);

const dynamo = await startDynamo();
const sqs = await startSqs();

async function tickReadUnits(name: string, extra: number) {
  const config = await bootstrapStack({
    dynamodbEndpoint: dynamo.endpoint,
    sqsEndpoint: sqs.endpoint,
    tableName: `bench-${name}`,
    settings: CLOUD_SETTINGS,
  });
  // The metered client is the one the adapters use, so every call of the tick is counted.
  const raw = createDynamoClient(config);
  const db = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  const loadStart = Date.now();
  const later = Array.from({ length: extra }, (_, i) =>
    oneOffJob(loadStart + 3_600_000 + (i * 7 * 86_400_000) / extra, loadStart),
  );
  await putJobs(db, config.tableName, later);
  // The due jobs are placed from the moment the backlog is stored, so that both ticks find the
  // same due set as far ahead: a run due within 31 s costs its sweep a consistent read of the
  // job's runs (decision 0051), and a backlog that took half a minute to load would otherwise
  // have brought every due job that close, and measured the load's time, not the backlog.
  const now = Date.now();
  const jobs = Array.from({ length: due }, (_, i) => oneOffJob(now + 5_000 + (i * 55_000) / due, now));
  await putJobs(db, config.tableName, jobs);
  const loadMs = Date.now() - loadStart;

  const meter = meterCapacity(raw);
  const deps = createSchedulerDeps(config, db);
  const started = Date.now();
  const sweeps = await sweepEveryGroup(deps);
  const tickMs = Date.now() - started;
  const created = sweeps.reduce((sum, s) => sum + s.runsCreated, 0);
  const queries = (meter.calls().QueryCommand ?? 0) + (meter.calls().ScanCommand ?? 0);
  // What the items read cost beyond each call's 0.5-RRU minimum: the part that could grow with
  // the stored backlog (the minimum grows with shards and hours, not with jobs).
  const itemReads = meter.reads() - 0.5 * queries;
  return {
    reads: meter.reads(),
    itemReads,
    writes: meter.writes(),
    created,
    tickMs,
    loadMs,
    calls: meter.calls(),
  };
}

const small = await tickReadUnits("due-only", 0);
const large = await tickReadUnits("with-backlog", stored);
const ratio = large.reads / small.reads;
const itemRatio = large.itemReads / small.itemReads;
console.log(
  `machine: ${process.platform} ${process.arch}, Node ${process.version}, ${(await import("node:os")).cpus().length} cores`,
);
for (const [label, r, count] of [
  [`${due} jobs stored, all due`, small, due],
  [`${due + stored} jobs stored, ${due} due`, large, due + stored],
] as const) {
  console.log(
    `${label.padEnd(36)} read units ${r.reads.toFixed(1).padStart(8)}   write units ${r.writes.toFixed(1).padStart(8)}   runs created ${r.created}   tick ${r.tickMs} ms   (loaded ${count} jobs in ${r.loadMs} ms)`,
  );
}
console.log(
  `queries per tick: ${large.calls.QueryCommand ?? 0} (each at least 0.5 RRU: ${((large.calls.QueryCommand ?? 0) * 0.5).toFixed(1)} RRU the floor)`,
);
reportVerdict([
  exactly("runs created, all due", small.created, due),
  exactly("runs created, with backlog", large.created, due),
  atMost("read-unit ratio", ratio, maxRatio, (n) => n.toFixed(3)),
  atMost(
    `ratio of the read units beyond each query's 0.5 minimum (${small.itemReads.toFixed(1)} vs ${large.itemReads.toFixed(1)})`,
    itemRatio,
    maxRatio,
    (n) => n.toFixed(3),
  ),
]);
await sqs.close();
await dynamo.close();
