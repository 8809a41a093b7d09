/**
 * bench-cost: a realistic mix run end to end on the local stack, every AWS request counted,
 * priced at list prices per million runs.
 *
 *   npx tsx scripts/bench-cost.ts [--jobs 2000] [--recurring 20] [--minutes 3] [--mix pull|push|bulk|recurring]
 *                                 [--max-usd N]
 *
 * Lambda time is printed as measured (an upper bound: the emulators answer far slower than
 * DynamoDB and SQS) and with each wait on an emulator replaced by the service's typical latency
 * in AWS (scripts/emulator-latency.ts names the figures and their source); the cost lines and
 * the verdict use the latter, the measured total is printed beside them.
 *
 * Exits non-zero when the total per million runs on-demand is over the mix's target
 * (TARGET_USD: issue 28's, $8.00 for either mix; `--max-usd` sets another) or no run completed.
 * Reads are counted by DynamoDB's rules too (every Query at least 0.5 RRU, capacity-meter.ts).
 *
 * The whole system runs as `npm start` wires it (HTTP gateway with SigV4, handlers, the tick
 * every 60 s as in AWS, the sweeper's SQS event source), with 4 workers of the worker SDK over
 * signed HTTP. The mix: one-off jobs due over the next minutes, of which 85% succeed at once,
 * 10% fail once and succeed on retry, 5% run for 7 s on a 5 s lease and heartbeat; plus
 * every-minute cron jobs. Counted: DynamoDB read units (ReturnConsumedCapacity on every call,
 * one client middleware) and write units by DynamoDB's own rules, the global secondary indexes'
 * included (capacity-meter.ts with item-size.ts and read-units.ts; the emulator reports the table's alone), SQS requests by kind, API requests, Lambda invocations
 * and their measured durations (as GB-seconds at each function's memory: FUNCTION_MEMORY_MB), tick invocations. Prices: on-demand
 * (the target's basis) and, for DynamoDB, provisioned capacity at 70% utilisation as well.
 *
 * `--mix push` (issue 17): the same jobs and failure mix with no workers: half of them name a
 * webhook (a receiver on 127.0.0.1 that answers 204, 503 once for the retried tenth, or after
 * 7 s for the slow twentieth), half a Lambda function (a local function that throws once, or
 * takes 7 s), the every-minute jobs a webhook; the dispatcher Lambda delivers them from the
 * push queue's event source. Its invocations, its GB-seconds (while it holds runs for their
 * second and waits on the targets) and the event source's requests for non-empty batches
 * and their deletes are counted; the targets' own cost is not.
 *
 * `--mix bulk` (issue 28): the pull mix, its one-off jobs created 100 to a request through
 * POST /api/v1/jobs/batch (decision 0040), so the API's requests and Lambda time per job drop;
 * the stored writes are the same.
 *
 * `--mix recurring` (issue 28): only every-minute cron jobs on workers (200 for 10 minutes unless
 * --recurring and --minutes say more; no one-off jobs), target $3.00 a million runs.
 *
 * `--mix idle` (issue 28): no job at all, `--workers` idle SDK workers (default 4; 0 too) asking
 * for work, for --minutes (default 10, two of the workers' 5-minute fallback lease requests).
 * Prints what the deployment costs a month at the defaults, by component: the tick, the sweep of
 * every shard, the event sources' polling (modelled: AWS polls an SQS event source with 5
 * long-polling pollers, ESM_POLLERS), the workers' long polls of their own lanes (decision 0049,
 * counted on the SDK's own SQS client) and their lease and lanes requests. Target $5.00 a month
 * with 4 workers.
 */
import "../local/runtime-env";
import { parseArgs } from "node:util";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { CreateJobsResponse } from "@jobsched/contract";
import { createSignedFetch, createWorker } from "@jobsched/worker";
import { createBatch } from "../cli/bulk-create";
import { createSqsClient } from "../lambdas/adapters/clients";
import { createSchedulerDeps } from "../lambdas/adapters/scheduler-deps";
import { runTick } from "../lambdas/core/use-cases/tick";
import { CLOUD_SETTINGS, LOCAL_SETTINGS } from "../lambdas/definitions/settings";
import { createApiHandler } from "../lambdas/handlers/api";
import { createInternalHandler } from "../lambdas/handlers/internal";
import { createSweepHandler } from "../lambdas/handlers/sweep";
import { type HttpHandler, startHttpGateway } from "../local/http-gateway";
import { loadLocalCredentials } from "../local/local-credentials";
import { startSqsEventSource } from "../local/sqs-event-source";
import { startTicker } from "../local/ticker";
import { readsTwoBuckets, reportIdle } from "./bench-cost-idle";
import { meterRequests } from "./bench-cost-prices";
import { startPushTargets } from "./bench-cost-push-targets";
import { reportMix } from "./bench-cost-report";
import { meteredTable, startBenchStack } from "./bench-support";
import { createInvocationTimer } from "./emulator-latency";

const { values } = parseArgs({
  options: {
    jobs: { type: "string" },
    recurring: { type: "string" },
    minutes: { type: "string" },
    mix: { type: "string", default: "pull" },
    workers: { type: "string" },
    "max-usd": { type: "string" },
    help: { type: "boolean" },
  },
});
if (values.help) {
  console.log(
    "usage: npx tsx scripts/bench-cost.ts [--jobs 2000] [--recurring 20] [--minutes 3] [--mix pull|push|bulk|recurring] [--max-usd N]\n       --mix recurring: only every-minute crons, at least 200 for at least 10 minutes",
  );
  process.exit(0);
}
if (!["pull", "push", "bulk", "recurring", "idle"].includes(values.mix)) {
  console.error(
    "--mix: pull (workers), push (targets), bulk (pull, its jobs created 100 a request), recurring (every-minute crons only) or idle (no jobs)",
  );
  process.exit(2);
}
const mix = values.mix as "pull" | "push" | "bulk" | "recurring" | "idle";
/** `--mix idle`: no jobs; what the deployment costs a month with `--workers` idle workers. */
const idle = mix === "idle";
const workerCount = Number(values.workers ?? "4");
if (!Number.isInteger(workerCount) || workerCount < 0 || (!idle && values.workers !== undefined)) {
  console.error("--workers: a whole number of idle workers, with --mix idle only");
  process.exit(2);
}
/** `--mix recurring`: every-minute crons only, at least 200 of them for at least 10 minutes. */
const recurringOnly = values.mix === "recurring";
const jobCount = Number(values.jobs ?? (recurringOnly || idle ? "0" : "2000"));
const recurringCount = Number(values.recurring ?? (recurringOnly ? "200" : idle ? "0" : "20"));
const minutes = Number(values.minutes ?? (recurringOnly || values.mix === "idle" ? "10" : "3"));
if (idle && (jobCount !== 0 || recurringCount !== 0)) {
  console.error("--mix idle: no jobs (--jobs 0 --recurring 0)");
  process.exit(2);
}
if (recurringOnly && (jobCount !== 0 || recurringCount < 200 || minutes < 10)) {
  console.error(
    "--mix recurring: no one-off jobs (--jobs 0), --recurring at least 200, --minutes at least 10",
  );
  process.exit(2);
}
const push = mix === "push";
/** `--mix bulk`: the pull mix, its one-off jobs created 100 at a time (POST /api/v1/jobs/batch). */
const bulk = mix === "bulk";
/**
 * Each mix's target, USD per million runs on-demand: issue 28 restated them on write units as
 * DynamoDB bills them (index entries included), withdrawing the $5.00 / $3.00 set on the
 * emulator's table-only units.
 */
const TARGET_USD = { pull: 8.0, push: 8.0, bulk: 8.0, recurring: 3.0, idle: 5.0 } as const;
const targetUsd = values["max-usd"] === undefined ? TARGET_USD[mix] : Number(values["max-usd"]);
if (!Number.isFinite(targetUsd)) {
  console.error("--max-usd: a number of dollars per million runs");
  process.exit(2);
}
const sleep = (ms: number) => new Promise((done) => setTimeout(done, Math.max(0, ms)));

/** Each invocation's SDK calls, timed so its duration can be restated at AWS's latencies. */
const invocationTimer = createInvocationTimer();

/**
 * Counts a Lambda's invocations and adds up their durations: as measured here (`ms`, an upper
 * bound: the emulators answer far slower than DynamoDB and SQS) and with each wait on an
 * emulator replaced by the service's typical latency in AWS (`awsMs`, emulator-latency.ts).
 */
function metered<A extends unknown[], R>(
  counter: { invocations: number; ms: number; awsMs: number },
  handler: (...args: A) => Promise<R>,
) {
  return (...args: A): Promise<R> =>
    invocationTimer.invoke(
      () => handler(...args),
      (measuredMs, awsMs) => {
        counter.invocations += 1;
        counter.ms += measuredMs;
        counter.awsMs += awsMs;
      },
    );
}

const stack = await startBenchStack("bench-cost", {
  // The push mix's receiver and functions are on this machine.
  settings: { ...CLOUD_SETTINGS, leasesPerSecond: LOCAL_SETTINGS.leasesPerSecond, allowPrivateTargets: 1 },
});
const { config } = stack;
const { dynamoClient, capacity, db } = meteredTable(config);
const sqsClient = createSqsClient(config);
const sqsCalls = meterRequests(sqsClient);
invocationTimer.time(dynamoClient, "dynamodb");
invocationTimer.time(sqsClient, "sqs");
/** The workers' own long polls of their lanes (decision 0049), on the SDK's SQS clients. */
const laneCalls: Record<string, number> = {};
const credentials = loadLocalCredentials();
// The worker credentials' bindings, as `npm start` wires them: without them every lease is a 403.
const deps = createSchedulerDeps({ ...config, workerBindings: credentials.workerBindings }, db, sqsClient);

const lambdas = {
  api: { invocations: 0, ms: 0, awsMs: 0 },
  internal: { invocations: 0, ms: 0, awsMs: 0 },
  sweeper: { invocations: 0, ms: 0, awsMs: 0 },
  tick: { invocations: 0, ms: 0, awsMs: 0 },
  dispatcher: { invocations: 0, ms: 0, awsMs: 0 },
};
/** The worker-facing requests by route (leases, completions, heartbeats, lanes). */
const workerRoutes: Record<string, number> = {};
function countedByRoute(counts: Record<string, number>, handler: HttpHandler): HttpHandler {
  return (event, ...rest) => {
    const route = String((event as { rawPath?: unknown }).rawPath ?? "?").replace(/^\/internal\//, "");
    counts[route] = (counts[route] ?? 0) + 1;
    return handler(event, ...rest);
  };
}
/**
 * The tenant API's answers by status: a create the creates-per-second quota refused (429) is
 * sent again after its Retry-After, as the CLI and SDK do, and its request is counted in the
 * cost; the count says how many there were.
 */
const tenantAnswers: Record<string, number> = {};
function countedByStatus(counts: Record<string, number>, handler: HttpHandler): HttpHandler {
  return async (event, ...rest) => {
    const answer = await handler(event, ...rest);
    const status = String(answer.statusCode ?? "?");
    counts[status] = (counts[status] ?? 0) + 1;
    return answer;
  };
}
const gateway = await startHttpGateway(
  {
    api: countedByStatus(tenantAnswers, metered(lambdas.api, createApiHandler(deps) as HttpHandler)),
    internal: countedByRoute(
      workerRoutes,
      metered(lambdas.internal, createInternalHandler(deps) as HttpHandler),
    ),
  },
  { port: 0, credentials },
);
// The sweeper's event source polls on a client of its own: in AWS the event source mapping's
// polling is a small fixed cost, not a per-run one, and is reported apart.
const pollingClient = createSqsClient(config);
const pollingCalls = meterRequests(pollingClient);
const sweeper = startSqsEventSource(
  pollingClient,
  config.sweepQueueUrl,
  metered(lambdas.sweeper, createSweepHandler(deps)),
  { batchSize: 4, concurrency: 2, onError: (error) => console.error("sweep poll failed", error) },
);
// The push queue's event source polls on a client of its own too; its non-empty receives (one
// per dispatcher invocation) and its deletes are per-run costs, its empty polls fixed ones.
const pushPollingClient = createSqsClient(config);
const pushPollingCalls = meterRequests(pushPollingClient);
// The tick, every 60 s as EventBridge fires it (its invocations are counted from the elapsed
// minutes; its few milliseconds of duration are left out of the GB-seconds).
const ticker = startTicker(deps, CLOUD_SETTINGS.tickSeconds * 1000, () => undefined);

// The workload. One-off jobs due from 70 s to (minutes - 0.5) minutes ahead, created through
// the API (signed HTTP, so the API requests count), and every-minute cron jobs.
const tenant = credentials.first("tenant");
const call = createSignedFetch({ endpoint: gateway.url, region: credentials.region, credentials: tenant });
const started = Date.now();
const windowMs = (minutes - 0.5) * 60_000 - 70_000;
const modes = (i: number) => (i % 20 === 0 ? "heartbeat" : i % 10 === 1 ? "retry-once" : "ok");
const outcomes = { succeeded: 0, failedOnce: 0, heartbeatRuns: 0 };
const pushed = push
  ? await startPushTargets({
      outcomes,
      deps,
      tenantPrincipal: credentials.first("tenant").principal,
      pushPollingClient,
      pushQueueUrl: config.pushQueueUrl,
      sqsEndpoint: config.sqsEndpoint ?? "",
      meter: (handler) => metered(lambdas.dispatcher, handler),
    })
  : undefined;
/** A job's body: a worker type (pull), or a webhook or a function as its target (push, by turns). */
const jobBody = (n: number, fields: Record<string, unknown>) => {
  if (!pushed) return { type: "cost", ...fields };
  return { target: n % 2 === 0 ? pushed.webhook : pushed.function, ...fields };
};
/** A one-off job's body: due from 70 s to the window's end, in order, with its failure mode. */
const oneOffBody = (n: number) => {
  const mode = modes(n);
  return jobBody(n, {
    runAt: new Date(started + 70_000 + (windowMs * n) / jobCount).toISOString(),
    payload: { mode, n },
    retry: { base: 2 },
    ...(mode === "heartbeat" && !push ? { leaseSeconds: 5 } : {}),
  });
};
for (let i = 0; bulk && i < jobCount; i += 100) {
  const jobs = Array.from({ length: Math.min(100, jobCount - i) }, (_, k) => oneOffBody(i + k));
  // Items the creates-per-second quota refused are sent again after its Retry-After, as the CLI does.
  const results = await createBatch(async (batch) => {
    const response = await call("POST", "/api/v1/jobs/batch", { body: { jobs: batch } });
    if (response.status !== 200) throw new Error(`bulk create answered ${response.status}`);
    return response.body as CreateJobsResponse;
  }, jobs);
  const refused = results.filter((r) => r.status !== 201);
  if (refused.length > 0)
    throw new Error(`bulk create refused items: ${JSON.stringify(refused.slice(0, 3))}`);
}
for (let i = 0; !bulk && i < jobCount; i += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, jobCount - i) }, async (_, k) => {
      const response = await call("POST", "/api/v1/jobs", { body: oneOffBody(i + k) });
      if (response.status !== 201) throw new Error(`create answered ${response.status}`);
    }),
  );
}
for (let i = 0; i < recurringCount; i++) {
  const response = await call("POST", "/api/v1/jobs", {
    body: jobBody(0, { cron: "* * * * *", payload: { mode: "ok", recurring: i }, missedRuns: "skip" }),
  });
  if (response.status !== 201) throw new Error(`create answered ${response.status}`);
}
console.log(
  `created ${jobCount} one-off jobs and ${recurringCount} every-minute jobs (${mix}) in ${Date.now() - started} ms`,
);

// Pull: four workers over signed HTTP, the SDK's heartbeats and retries included.
const workerCredential = credentials.first("worker");
const workers = push
  ? []
  : Array.from({ length: idle ? workerCount : 4 }, (_, w) =>
      createWorker({
        endpoint: gateway.url,
        region: credentials.region,
        credentials: workerCredential,
        types: ["cost"],
        concurrency: 50,
        workerId: `cost-${w}`,
        stopOnSignals: false,
        laneClient: (lane) => {
          const client = new SQSClient({
            region: lane.region,
            credentials: lane.credentials,
            maxAttempts: 1,
            ...(lane.endpoint === undefined ? {} : { endpoint: lane.endpoint, useQueueUrlAsEndpoint: false }),
          });
          meterRequests(client, laneCalls);
          return client;
        },
        log: () => undefined,
        handler: async (run) => {
          const { mode } = run.payload as { mode: string };
          if (mode === "retry-once" && run.attempt === 1) {
            outcomes.failedOnce += 1;
            throw new Error("transient");
          }
          if (mode === "heartbeat") {
            outcomes.heartbeatRuns += 1;
            await sleep(7_000); // longer than its 5 s lease: the SDK heartbeats
          }
          outcomes.succeeded += 1;
        },
      }),
    );

if (idle) {
  const { ticks, twoBucketTicks } = await measureIdle();
  await Promise.all(workers.map((w) => w.stop()));
  await sweeper.stop();
  reportIdle(ticks, { lambdas, sqsCalls, laneCalls, capacity, workerCount, targetUsd, twoBucketTicks });
  await new Promise<void>((done) => gateway.server.close(() => done()));
  await stack.close();
  process.exit(process.exitCode ?? 0);
}

await sleep(minutes * 60_000 + 20_000 - (Date.now() - started));

lambdas.tick.invocations = Math.ceil((Date.now() - started) / (CLOUD_SETTINGS.tickSeconds * 1000));
await Promise.all(workers.map((w) => w.stop()));
await pushed?.stop();
await ticker.stop();
await sweeper.stop();

const runs = outcomes.succeeded;
if (runs === 0) {
  // A bench that ran nothing must not print a price (it once did, after worker bindings came).
  console.error("no run completed: the workers leased nothing");
  await new Promise<void>((done) => gateway.server.close(() => done()));
  await stack.close();
  process.exit(1);
}
const exitCode = reportMix({
  mix,
  push,
  targetUsd,
  runs,
  outcomes,
  capacity,
  lambdas,
  workerRoutes,
  tenantAnswers,
  calls: { sqs: sqsCalls, lanes: laneCalls, sweepPolling: pollingCalls, pushPolling: pushPollingCalls },
});
await new Promise<void>((done) => gateway.server.close(() => done()));
await stack.close();
process.exit(exitCode);

/**
 * The idle mix's measurement. With workers, one job of their type runs first, so their tenant's
 * lane exists as in a deployment at rest between runs (an idle worker's lease request long-polls
 * its lanes; with none it only waits). Unmeasured ticks settle the sweep cursors. Then the meters start
 * from zero and the tick runs every
 * minute for --minutes minutes, timed as a Lambda (its SDK calls restated at AWS latencies), the
 * sweeper taking its sweeps from the queue and the workers asking for work. Returns the ticks.
 */
async function measureIdle(): Promise<{ ticks: number; twoBucketTicks: number }> {
  if (workerCount > 0) {
    const warmUp = await call("POST", "/api/v1/jobs", {
      body: { type: "cost", payload: { mode: "ok" }, runAt: new Date(Date.now() + 10_000).toISOString() },
    });
    if (warmUp.status !== 201) throw new Error(`warm-up create answered ${warmUp.status}`);
    const until = Date.now() + 180_000;
    while (outcomes.succeeded < 1 && Date.now() < until) await sleep(500);
    if (outcomes.succeeded < 1) throw new Error("the warm-up run did not complete: no lane to idle on");
    await sleep(5_000); // its completion and the job's end are written
  }
  await ticker.stop();
  // Ticks unmeasured, their sweeps let finish, until one moves no sweep cursor (at most 5): a
  // new table's cursors catch up on their first ticks (decision 0002), which a deployment at
  // rest has long done. One settling tick was not always enough: a run that measured the catch-up
  // read 9,600 units in 10 ticks where the others read 5,500.
  // Each settling tick sweeps every group, not one turn's (decision 0056): the groups of the
  // other turn would otherwise settle in the measured window, a new table's cost counted as a
  // month's.
  const everyGroup = { ...deps, settings: { ...deps.settings, sweepEveryTicks: 1 } };
  for (let settling = 0; settling < 5; settling++) {
    capacity.reset();
    await runTick(everyGroup);
    await sleep(20_000);
    if (capacity.writes() === 0) break;
  }
  capacity.reset();
  for (const calls of [sqsCalls, pollingCalls, laneCalls])
    for (const name of Object.keys(calls)) delete calls[name];
  for (const counter of Object.values(lambdas)) Object.assign(counter, { invocations: 0, ms: 0, awsMs: 0 });
  // Each tick names its turn, as each turn's EventBridge rule does (decision 0056).
  const tick = metered(lambdas.tick, (turn: number) => runTick(deps, { turn }));
  const ticks = Math.max(1, Math.round(minutes));
  let twoBucketTicks = 0;
  for (let i = 0; i < ticks; i++) {
    const at = Date.now();
    // Near an hour's turn a sweep reads the due index's two hourly buckets (sweep-group.ts):
    // counted, so the month can be told from the window (reportIdle).
    if (readsTwoBuckets(at, CLOUD_SETTINGS.lookaheadSeconds)) twoBucketTicks++;
    await tick(i % deps.settings.sweepEveryTicks);
    await sleep(at + CLOUD_SETTINGS.tickSeconds * 1000 - Date.now());
  }
  return { ticks, twoBucketTicks };
}
