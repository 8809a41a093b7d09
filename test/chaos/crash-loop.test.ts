import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server as HttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createJobResponse, jobResponse, OverlapPolicy, runsPageResponse } from "@jobsched/contract";
import { createSignedFetch, type JsonResponse } from "@jobsched/worker";
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import { retryAfterSeconds } from "../../lambdas/adapters/targets/retry-after";
import { PUSH_QUEUE } from "../../lambdas/definitions/queues";
import type { AwsFaultEvent } from "../../local/aws-faults";
import { loadLocalCredentials } from "../../local/local-credentials";
import { type RunningRuntime, startLocalRuntime } from "../../local/spawn-runtime";
import { bodyOf } from "../support/bodies";
import { startWebhookReceiver } from "../support/webhook-receiver";
import { AT_MOST_ONCE_KIND, type JobState, keepBooks, type RunRow } from "./accounting";
import {
  type AcceptedJob,
  type AwsFault,
  CHAOS_TYPE,
  CHAOS_WORKERS,
  type ChaosPayload,
  type ChaosTenant,
  type Delivery,
  type Fault,
  type WorkerEvent,
} from "./chaos-events";

/**
 * The crash-loop test (`npm run test:chaos`, not part of `npm test`). A client creates a mix of
 * jobs through the signed API (one-off jobs due within the window, every-minute cron jobs,
 * jobs that fail and retry or fail for good, slow jobs that heartbeat; some paused and resumed,
 * some cancelled) while worker processes execute them and the local runtime is killed with
 * SIGKILL at random moments and started again. Workers are stopped (SIGSTOP) and killed too.
 * After the last restart and a drain, the books must balance: no accepted job lost, every due
 * run finished or recorded as missed or cancelled with its reason, no completion accepted with
 * a stale fence, and every run ended as its kind says (an `ok` run succeeded, a `permanent` one
 * was dead-lettered; missed, cancelled or lost only for a reason the test caused: kind-rules.ts).
 * At-least-once allows duplicate executions only where a fault was: each execution whose
 * completion was not accepted, and each run whose handler succeeded twice, is explained by a
 * runtime kill, a worker stop or kill, or the job's cancel in its window (fault-books.ts), and
 * at-most-once jobs in the mix must never run a run twice (a lapsed lease is recorded lost).
 * Jobs come from two tenants; one worker is bound to each and a pool worker serves both: no
 * worker may execute a run of a tenant it does not serve. One one-off job in ten is a push job
 * (issue 17): the runtime's dispatcher POSTs its runs to a receiver in this process, which
 * checks each signature against the tenants' webhook secrets and logs each delivery as an
 * execution by `dispatcher:<tenant whose secret signed it>`, so the same books hold for them: no
 * delivery before its second, none signed for another tenant, none succeeded where it failed.
 *
 * Since issue 27 the mix also holds every-minute jobs under each overlap policy (allow, skip,
 * buffer-one, cancel-previous), some at-most-once, whose runs outlast a minute early in the
 * window, and every-minute jobs whose first attempts fail (retried 20 s later); while the loop
 * runs, some are PATCHed through the API to another policy or delivery mode, as a user would.
 * Their runs may end skipped, cancelled as replaced, dead-lettered as at-most-once or lost
 * only as the job's policy and delivery at that moment allow (overlap-rules.ts). And about 2%
 * of the runtime's DynamoDB and SQS requests fail as AWS fails them (throttling, 500, 503,
 * timeouts, reset sockets; local/aws-faults.ts, below the SDK's retries): the runtime logs each
 * with its time, operation and the runs it was about, and a repeat may be explained by one
 * only if it was about that run and fell in the execution's window.
 *
 * Sizes come from the environment: CHAOS_JOBS (default 520), CHAOS_KILLS (default 22),
 * CHAOS_FAULT_RATE (the share of AWS requests failed, default 0.02; 0 for none).
 */
const JOBS = Number(process.env.CHAOS_JOBS ?? 520);
const KILLS = Number(process.env.CHAOS_KILLS ?? 22);
const FAULT_RATE = Number(process.env.CHAOS_FAULT_RATE ?? 0.02);
const CRON_JOBS = 24;
/** Every-minute jobs whose runs overlap: two per overlap policy (allow, skip, buffer-one, cancel-previous). */
const OVERLAP_JOBS = 8;
/** Every-minute jobs failing each first attempt, PATCHed to at-most-once while a run may wait for its retry. */
const PATCHED_RETRY_JOBS = 2;
const POLICIES = [
  OverlapPolicy.Allow,
  OverlapPolicy.Skip,
  OverlapPolicy.BufferOne,
  OverlapPolicy.CancelPrevious,
] as const;
/** Overlap jobs' executions started this long before the window's end are short, so the drain is short. */
const SHORT_RUNS_BEFORE_END_MS = 180_000;
const CREATE_WINDOW_MS = 270_000;
const CRON_WINDOW_MS = 390_000;
/**
 * How long the drain waits for the books to settle, from the later of the last restart and the
 * last instant a run falls due: a message whose receive was carried out with its answer lost
 * stays hidden for its queue's visibility timeout (the push queue's is six times the
 * dispatcher's timeout, 360 s), and its run then needs a lease and a delivery (the margin).
 */
const DRAIN_LIMIT_MS = PUSH_QUEUE.visibilityTimeoutSeconds * 1_000 + 120_000;
const ROOT = resolve(import.meta.dirname, "../..");

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
/** A JSON-lines file (a line cut short by a SIGKILL is skipped). */
function readJsonLines<T>(file: string): T[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").flatMap((line) => {
    try {
      return line.trim() === "" ? [] : [JSON.parse(line) as T];
    } catch {
      return [];
    }
  });
}
const between = (low: number, high: number) => low + Math.random() * (high - low);
const credentials = loadLocalCredentials();

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  await new Promise((done) => server.close(done));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** The job mix: what each job's runs do in the worker, and how it is scheduled. */
function mixFor(i: number): { payload: ChaosPayload; extra: Record<string, unknown> } {
  const roll = i % 20;
  const fast = () => Math.round(between(0, 400));
  if (roll < 13) return { payload: { kind: "ok", ms: fast(), failAttempts: 0, permanent: false }, extra: {} };
  if (roll < 15) {
    return {
      payload: { kind: "retry-once", ms: fast(), failAttempts: 1, permanent: false },
      extra: { retry: { base: 1, cap: 2 }, maxAttempts: 4 },
    };
  }
  if (roll === 15) {
    return { payload: { kind: "permanent", ms: fast(), failAttempts: 0, permanent: true }, extra: {} };
  }
  if (roll === 16) {
    return {
      payload: { kind: "exhausts-retries", ms: fast(), failAttempts: 99, permanent: false },
      extra: { retry: { base: 1, cap: 2 }, maxAttempts: 2 },
    };
  }
  if (roll === 17) {
    return {
      payload: { kind: "late-is-missed", ms: fast(), failAttempts: 0, permanent: false },
      extra: { maxLateness: 3 },
    };
  }
  // Slow runs hold short leases by heartbeats: they are the ones a stopped worker loses. Every
  // other one is at-most-once: a lapsed lease is recorded lost and never leased again.
  if (roll === 19 && Math.floor(i / 20) % 2 === 1) {
    return {
      payload: {
        kind: AT_MOST_ONCE_KIND,
        ms: Math.round(between(4_000, 9_000)),
        failAttempts: 0,
        permanent: false,
      },
      extra: { leaseSeconds: 5, delivery: "at-most-once" },
    };
  }
  return {
    payload: {
      kind: "slow-heartbeats",
      ms: Math.round(between(4_000, 9_000)),
      failAttempts: 0,
      permanent: false,
    },
    extra: { leaseSeconds: 5, maxAttempts: 6 },
  };
}

/**
 * Overlap job j (0-7): policy POLICIES[j % 4]; j = 1 and 6 at-most-once. Executions work about
 * 100 s (a minute's firing finds the previous one running) until SHORT_RUNS_BEFORE_END_MS before
 * the window's end, and under a second from then on. A 45 s lease, kept by heartbeats every
 * 15 s, outlasts a runtime restart: these jobs are about overlaps (slow-heartbeats jobs lose
 * their short leases to the kills).
 */
function overlapMixFor(j: number, endAt: number): { payload: ChaosPayload; extra: Record<string, unknown> } {
  return {
    payload: {
      kind: "overlap",
      ms: Math.round(between(95_000, 105_000)),
      failAttempts: 0,
      permanent: false,
      shortFrom: endAt - SHORT_RUNS_BEFORE_END_MS,
      shortMs: Math.round(between(100, 900)),
    },
    extra: {
      leaseSeconds: 45,
      overlapPolicy: POLICIES[j % POLICIES.length],
      delivery: j === 1 || j === 6 ? "at-most-once" : "at-least-once",
    },
  };
}

/** The PATCHes an overlap job gets while the loop runs: [ms after the start, the change]. */
function overlapPatches(j: number): Array<[number, Record<string, string>]> {
  const when = () => between(100_000, 200_000);
  const next = POLICIES[(j + 1) % POLICIES.length] as string;
  if (j === 2) return [[when(), { delivery: "at-most-once" }]];
  if (j === 6) {
    const at = when();
    return [
      [at, { overlapPolicy: next }],
      [at + 30_000, { delivery: "at-least-once" }],
    ];
  }
  return j >= 4 ? [[when(), { overlapPolicy: next }]] : [];
}

/** A retry-patched job (k 0-1): every first attempt fails and is retried 20 s later; k = 1 under skip. */
function retryPatchedMixFor(k: number): { payload: ChaosPayload; extra: Record<string, unknown> } {
  return {
    payload: { kind: "retry-patched", ms: Math.round(between(0, 400)), failAttempts: 1, permanent: false },
    extra: {
      retry: { base: 20, cap: 20 },
      maxAttempts: 3,
      overlapPolicy: k === 1 ? OverlapPolicy.Skip : OverlapPolicy.Allow,
    },
  };
}

/** A push job's payload: one in two fails its first delivery with a 503, and is retried. */
function pushMixFor(i: number): { payload: ChaosPayload; extra: Record<string, unknown> } {
  const retried = Math.floor(i / 10) % 2 === 1;
  return {
    payload: {
      kind: retried ? "push-retry-once" : "push-ok",
      ms: 0,
      failAttempts: retried ? 1 : 0,
      permanent: false,
    },
    extra: { retry: { base: 1, cap: 2 }, maxAttempts: 4 },
  };
}

/**
 * The push jobs' webhook receiver: each delivery's signature checked against both tenants'
 * secrets (the `standardwebhooks` library), logged as an execution by the dispatcher of the
 * tenant whose secret signed it; a first attempt of a retried kind answers 503 (logged failed).
 */
async function startPushReceiver(secrets: ReadonlyMap<ChaosTenant, string>, logFile: string) {
  let unsigned = 0;
  const receiver = await startWebhookReceiver(({ body, headers, at }) => {
    const signer = [...secrets].find(([, secret]) => {
      try {
        new Webhook(secret).verify(body, headers);
        return true;
      } catch {
        return false;
      }
    })?.[0];
    if (!signer) unsigned += 1;
    const envelope = JSON.parse(body) as {
      runId: string;
      fence: number;
      attempt: number;
      payload: ChaosPayload;
    };
    const worker = `dispatcher:${signer ?? "unsigned"}`;
    const fail = envelope.attempt <= envelope.payload.failAttempts;
    const events: WorkerEvent[] = [
      { e: "start", runId: envelope.runId, fence: envelope.fence, attempt: envelope.attempt, worker, at },
      ...(fail
        ? [
            {
              e: "done" as const,
              runId: envelope.runId,
              fence: envelope.fence,
              worker,
              result: "failed" as const,
              status: "push-answered" as const,
              sentAt: at,
              at,
            },
          ]
        : []),
    ];
    appendFileSync(logFile, events.map((event) => `${JSON.stringify(event)}\n`).join(""));
    return fail ? 503 : 204;
  });
  return { ...receiver, unsigned: () => unsigned };
}

describe("the local runtime in a crash loop", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "jobsched-chaos-"));
  const logFile = join(dataDir, "..", `${dataDir.split("/").pop()}-workers.jsonl`);
  let runtime: RunningRuntime | undefined;
  const workers = new Map<string, ChildProcess>();
  const servers: HttpServer[] = [];

  let passed = false;
  /** Every incarnation's output, written next to the data folder when the books do not balance. */
  const outputs: string[] = [];
  const runtimeLog = `${dataDir}-runtime.log`;
  /** The runtime's fault injection logs every injected AWS fault here (it outlives the kills). */
  const awsFaultFile = `${dataDir}-aws-faults.jsonl`;
  const runtimeEnv: Record<string, string> =
    FAULT_RATE > 0 ? { JOBSCHED_FAULT_RATE: String(FAULT_RATE), JOBSCHED_FAULT_LOG: awsFaultFile } : {};

  afterAll(async () => {
    for (const child of workers.values()) child.kill("SIGKILL");
    for (const server of servers) server.close();
    await runtime?.kill("SIGTERM");
    // A failed run keeps its data, the runtime's output and the workers' log for a post-mortem.
    if (passed) {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(logFile, { force: true });
      rmSync(awsFaultFile, { force: true });
    } else console.log(`kept for a post-mortem: ${dataDir}, ${runtimeLog}, ${logFile}, ${awsFaultFile}`);
  });

  it("loses no accepted job and accounts for every due run across 20+ SIGKILLs", {
    timeout: 20 * 60_000,
  }, async () => {
    const started = Date.now();
    const port = await freePort();
    runtime = await startLocalRuntime(dataDir, port, "INFO", runtimeEnv);
    const url = runtime.url;
    const tenantClient = (accessKeyId: string) => {
      const credential = credentials.byAccessKey.get(accessKeyId);
      if (!credential) throw new Error(`no dev credential ${accessKeyId}`);
      return createSignedFetch({ endpoint: url, region: credentials.region, credentials: credential });
    };
    const clients = { a: tenantClient("AKIAJOBSCHEDTENANTA1"), b: tenantClient("AKIAJOBSCHEDTENANTB1") };
    const tenantOf = new Map<string, ChaosTenant>();
    // Push jobs' receiver, in this process (it outlives the runtime's kills).
    const secrets = new Map<ChaosTenant, string>();
    const receiver = await startPushReceiver(secrets, logFile);
    servers.push(receiver.server);

    /**
     * A client call, as the job's tenant (or as `tenant`), retried through restarts until it
     * gets an answer below 500 (or gives up).
     */
    async function call(
      method: string,
      path: string,
      body?: unknown,
      query?: Record<string, string>,
      tenant?: ChaosTenant,
    ) {
      const jobId = /\/jobs\/(j_[0-9a-z]+)/.exec(path)?.[1];
      const signed = clients[tenant ?? (jobId ? tenantOf.get(jobId) : undefined) ?? "a"];
      const deadline = Date.now() + 120_000;
      for (;;) {
        try {
          const response = await signed(method, path, { body, query, signal: AbortSignal.timeout(10_000) });
          if (response.status < 500) return response;
        } catch {
          // the runtime is down or restarting
        }
        if (Date.now() > deadline) throw new Error(`${method} ${path}: no answer for 2 minutes`);
        await sleep(250);
      }
    }

    /**
     * A tenant's webhook secret, shown only in the answer of the POST that made it. Faults are
     * injected from the start: a write carried out with its answer lost makes the SDK's retry
     * a 409 (or the test's retry a 429 for a minute), and that secret is never shown. Rotating
     * again is the way out, as for any client; the secret that is finally shown signs every
     * delivery from then on (decision 0036).
     */
    async function webhookSecretOf(tenant: ChaosTenant): Promise<string> {
      for (let attempt = 1; attempt <= 5; attempt++) {
        const answer = await call("POST", "/api/v1/webhook-secret", undefined, undefined, tenant);
        const secret = (answer.body as { secret?: unknown } | undefined)?.secret;
        if (answer.status < 300 && typeof secret === "string") return secret;
        // 429: rotated a moment ago (by the write whose answer was lost); Retry-After says when.
        const retryAfter =
          retryAfterSeconds(answer.headers?.get("retry-after") ?? undefined, Date.now()) ?? 1;
        await sleep(Math.min(90, Math.max(1, retryAfter)) * 1000);
      }
      throw new Error(`no webhook secret for tenant ${tenant} after 5 tries`);
    }

    // Workers in their own processes, logging every execution and completion: one bound to
    // each tenant, and a pool serving both.
    const startWorker = (id: string) => {
      const accessKeyId = CHAOS_WORKERS.find((w) => w.id === id)?.accessKeyId ?? "";
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "test/chaos/chaos-worker.ts", url, id, logFile, accessKeyId],
        {
          cwd: ROOT,
          stdio: "ignore",
        },
      );
      workers.set(id, child);
    };
    for (const worker of CHAOS_WORKERS) startWorker(worker.id);

    for (const tenant of ["a", "b"] as const) secrets.set(tenant, await webhookSecretOf(tenant));

    // Prepare: the recurring jobs, every minute until the window closes.
    const accepted: AcceptedJob[] = [];
    const endAt = Math.floor((started + CRON_WINDOW_MS) / 60_000) * 60_000;
    const create = async (
      i: number,
      schedule: Record<string, unknown>,
      mix?: { payload: ChaosPayload; extra: Record<string, unknown> },
    ) => {
      const tenant: ChaosTenant = i % 2 === 0 ? "a" : "b";
      const push = "runAt" in schedule && i % 10 === 3;
      const { payload, extra } = mix ?? (push ? pushMixFor(i) : mixFor(i));
      const runsBy = push
        ? { target: { kind: "https", url: `${receiver.url}/${tenant}` } }
        : { type: CHAOS_TYPE };
      const sentAt = Date.now();
      const response = await call(
        "POST",
        "/api/v1/jobs",
        { ...runsBy, payload, idempotencyKey: `chaos-${started}-${i}`, ...extra, ...schedule },
        undefined,
        tenant,
      );
      if (response.status !== 201 && response.status !== 200) {
        throw new Error(`create ${i} answered ${response.status}: ${JSON.stringify(response.body)}`);
      }
      const job: AcceptedJob = {
        jobId: bodyOf(createJobResponse, response).jobId,
        tenant,
        schedule: "runAt" in schedule ? "once" : "cron",
        kind: payload.kind,
        createdSentAt: sentAt,
        ...("runAt" in schedule ? { runAt: Date.parse(String(schedule.runAt)) } : { endAt }),
        settings: [
          {
            overlapPolicy: (extra.overlapPolicy as OverlapPolicy | undefined) ?? OverlapPolicy.Allow,
            delivery: (extra.delivery as Delivery | undefined) ?? "at-least-once",
            sentAt,
            answeredAt: Date.now(),
          },
        ],
      };
      accepted.push(job);
      tenantOf.set(job.jobId, tenant);
      return job;
    };
    const crons: AcceptedJob[] = [];
    const everyMinute = { cron: "* * * * *", endAt: new Date(endAt).toISOString() };
    for (let i = 0; i < CRON_JOBS; i++) crons.push(await create(i, everyMinute));
    const overlapping: AcceptedJob[] = [];
    for (let j = 0; j < OVERLAP_JOBS; j++) {
      overlapping.push(await create(CRON_JOBS + j, everyMinute, overlapMixFor(j, endAt)));
    }
    const retryPatched: AcceptedJob[] = [];
    for (let k = 0; k < PATCHED_RETRY_JOBS; k++) {
      retryPatched.push(await create(CRON_JOBS + OVERLAP_JOBS + k, everyMinute, retryPatchedMixFor(k)));
    }
    const firstOneOff = CRON_JOBS + OVERLAP_JOBS + PATCHED_RETRY_JOBS;

    const control = async (job: AcceptedJob, action: "pause" | "resume" | "cancel") => {
      const sentAt = Date.now();
      const response =
        action === "cancel"
          ? await call("DELETE", `/api/v1/jobs/${job.jobId}`)
          : await call("POST", `/api/v1/jobs/${job.jobId}/${action}`);
      expect(response.status, `${action} ${job.jobId}: ${JSON.stringify(response.body)}`).toBe(200);
      if (action === "cancel") Object.assign(job, { cancelSentAt: sentAt, cancelAnsweredAt: Date.now() });
      if (action === "pause") job.pausedAt = sentAt;
      if (action === "resume") Object.assign(job, { resumedAt: sentAt, resumeAnsweredAt: Date.now() });
    };
    /** PATCH /api/v1/jobs/{id} as a user would, recording the job's settings from its answer on. */
    let patches = 0;
    const patch = async (job: AcceptedJob, change: Record<string, string>) => {
      const sentAt = Date.now();
      const response = await call("PATCH", `/api/v1/jobs/${job.jobId}`, change);
      expect(
        response.status,
        `PATCH ${job.jobId} ${JSON.stringify(change)}: ${JSON.stringify(response.body)}`,
      ).toBe(200);
      const before = job.settings?.at(-1);
      job.settings?.push({
        overlapPolicy:
          (change.overlapPolicy as OverlapPolicy | undefined) ?? before?.overlapPolicy ?? OverlapPolicy.Allow,
        delivery: (change.delivery as Delivery | undefined) ?? before?.delivery ?? "at-least-once",
        sentAt,
        answeredAt: Date.now(),
      });
      patches += 1;
    };
    const pending: Promise<void>[] = [];
    const later = (ms: number, action: () => Promise<void>) => pending.push(sleep(ms).then(action));
    overlapping.forEach((job, j) => {
      for (const [ms, change] of overlapPatches(j)) later(ms, () => patch(job, change));
    });
    // The retry-patched jobs turn at-most-once 10 s after a firing, 2-3 minutes in, while its
    // run waits for its retry (its first attempt failed at once; the retry is due at 20 s);
    // the first turns back 70 s later.
    retryPatched.forEach((job, k) => {
      const firingAfter = Math.ceil((started + between(120_000, 180_000)) / 60_000) * 60_000;
      later(firingAfter + 10_000 - Date.now(), async () => {
        await patch(job, { delivery: "at-most-once" });
        if (k === 0) {
          await sleep(70_000);
          await patch(job, { delivery: "at-least-once" });
        }
      });
    });
    // Four crons paused for a minute and a half, then resumed; three cancelled mid-window.
    for (const job of crons.slice(0, 4)) {
      later(between(30_000, 120_000), async () => {
        await control(job, "pause");
        await sleep(90_000);
        await control(job, "resume");
      });
    }
    for (const job of crons.slice(4, 7)) later(between(100_000, 250_000), () => control(job, "cancel"));

    // The one-off jobs arrive through the window; one in twelve is cancelled before it is due.
    const oneOffs = JOBS - firstOneOff;
    const creating = (async () => {
      for (let i = 0; i < oneOffs; i++) {
        const target = started + (CREATE_WINDOW_MS * i) / oneOffs;
        if (target > Date.now()) await sleep(target - Date.now());
        const cancelled = i % 12 === 5;
        const runAt = Date.now() + (cancelled ? between(60_000, 90_000) : between(4_000, 75_000));
        const job = await create(firstOneOff + i, { runAt: new Date(runAt).toISOString() });
        if (cancelled) later(between(3_000, 20_000), () => control(job, "cancel"));
      }
    })();

    // Act: the crash loop. The runtime is killed at random moments; now and then a worker is
    // stopped for longer than a short lease (its later completions carry a stale fence) or
    // killed outright and started again.
    const faults = { runtimeKills: 0, workerStops: 0, workerKills: 0, downMs: [] as number[] };
    /** Every fault with its time, for the books to explain repeats by. */
    const faultLog: Fault[] = [];
    let creationDone = false;
    void creating.then(() => {
      creationDone = true;
    });
    while (faults.runtimeKills < KILLS || !creationDone) {
      await sleep(between(3_000, 14_000));
      const killedAt = Date.now();
      const killed = await runtime.kill("SIGKILL");
      outputs.push(runtime.output());
      expect(killed).toBeNull(); // died of the signal, not on its own
      faults.runtimeKills += 1;
      const down = Date.now();
      await sleep(between(200, 5_000));
      runtime = await startLocalRuntime(dataDir, port, "INFO", runtimeEnv);
      faults.downMs.push(Date.now() - down);
      faultLog.push({ kind: "runtime-kill", at: killedAt, backAt: Date.now() });
      // Worker faults come on their own, a few seconds into the runtime's next life: each fault
      // is a single failure, as the guarantees are stated.
      const victim = CHAOS_WORKERS[faults.runtimeKills % CHAOS_WORKERS.length]?.id ?? "chaos-pool";
      if (faults.runtimeKills % 6 === 2) {
        later(between(1_000, 3_000), async () => {
          const stoppedAt = Date.now();
          workers.get(victim)?.kill("SIGSTOP");
          faults.workerStops += 1;
          await sleep(between(7_000, 11_000));
          workers.get(victim)?.kill("SIGCONT");
          faultLog.push({ kind: "worker-stop", worker: victim, at: stoppedAt, until: Date.now() });
        });
      } else if (faults.runtimeKills % 6 === 5) {
        later(between(1_000, 3_000), async () => {
          faultLog.push({ kind: "worker-kill", worker: victim, at: Date.now() });
          workers.get(victim)?.kill("SIGKILL");
          faults.workerKills += 1;
          await sleep(2_000);
          startWorker(victim);
        });
      }
    }
    await creating;
    await Promise.all(pending);
    const lastRestart = Date.now();
    const lastDue = Math.max(...accepted.map((job) => job.runAt ?? job.endAt ?? 0));
    const drainUntil = Math.max(lastRestart, lastDue) + DRAIN_LIMIT_MS;

    // Drain: until every job has nothing left to run and every run row is finished.
    const states = new Map<string, JobState>();
    const fetchState = async (jobId: string): Promise<{ state: JobState; settled: boolean }> => {
      const job = await call("GET", `/api/v1/jobs/${jobId}`);
      if (job.status !== 200) return { state: { found: false, runs: [] }, settled: true };
      const runs: RunRow[] = [];
      let cursor: string | undefined;
      do {
        const page: JsonResponse = await call("GET", `/api/v1/jobs/${jobId}/runs`, undefined, {
          limit: "100",
          ...(cursor ? { cursor } : {}),
        });
        const body = bodyOf(runsPageResponse, page);
        runs.push(...body.runs);
        cursor = body.cursor;
      } while (cursor);
      const view = bodyOf(jobResponse, job);
      // Settled: nothing left to fire and every run finished.
      // Settled: the job has ended and every run finished. (The job is read before its runs, so a
      // run finishing between the two reads cannot make an active job look settled.)
      const settled =
        (view.status === "completed" || view.status === "cancelled") &&
        runs.every((r) => r.status !== "pending" && r.status !== "leased");
      return { state: { found: true, createdAt: view.createdAt, status: view.status, runs }, settled };
    };
    let open = accepted.map((job) => job.jobId);
    while (open.length > 0 && Date.now() < drainUntil) {
      const still: string[] = [];
      for (const jobId of open) {
        const { state, settled } = await fetchState(jobId);
        states.set(jobId, state);
        if (!settled) still.push(jobId);
      }
      open = still;
      if (open.length > 0) await sleep(5_000);
    }
    const drainMs = Date.now() - lastRestart;

    // Assess: the workers' own logs against the API's books.
    for (const child of workers.values()) child.kill("SIGTERM");
    await sleep(1_000);
    const events = readJsonLines<WorkerEvent>(logFile);
    // The runtime's injected AWS faults join the faults the books explain repeats by.
    const awsEvents = FAULT_RATE > 0 ? readJsonLines<AwsFaultEvent>(awsFaultFile) : [];
    const awsFaults = awsEvents.filter((e): e is AwsFault => e.kind === "aws-fault");
    faultLog.push(...awsFaults);
    const awsRequests = awsEvents.reduce((sum, e) => sum + (e.kind === "aws-requests" ? e.count : 0), 0);
    const surfaced = awsEvents.filter((e) => e.kind === "aws-fault-surfaced");
    const countBy = <T>(items: readonly T[], key: (item: T) => string) =>
      items.reduce<Record<string, number>>((out, item) => {
        out[key(item)] = (out[key(item)] ?? 0) + 1;
        return out;
      }, {});
    const served = new Map<string, readonly ChaosTenant[]>([
      ...CHAOS_WORKERS.map((w) => [w.id, w.tenants] as const),
      ["dispatcher:a", ["a"]],
      ["dispatcher:b", ["b"]],
    ]);
    const books = keepBooks(accepted, states, events, served, faultLog);
    const minutes = ((Date.now() - started) / 60_000).toFixed(1);
    const downs = [...faults.downMs].sort((a, b) => a - b);
    console.log(
      [
        `crash loop: ${books.jobs} jobs accepted (${accepted.length - firstOneOff} one-off, ${firstOneOff} every-minute cron, ${OVERLAP_JOBS} of them overlapping, ${PATCHED_RETRY_JOBS} retry-patched;` +
          ` ${accepted.filter((j) => j.cancelSentAt !== undefined).length} cancelled, ${accepted.filter((j) => j.pausedAt !== undefined).length} paused and resumed)`,
        `faults: ${faults.runtimeKills} runtime SIGKILLs (down ${downs[0]}-${downs.at(-1)} ms incl. restart), ` +
          `${faults.workerStops} worker SIGSTOPs (7-11 s), ${faults.workerKills} worker SIGKILLs; ${CHAOS_WORKERS.length} worker processes (tenant A, tenant B, pool)`,
        `AWS faults injected: ${awsFaults.length} of at least ${awsRequests} requests (${((100 * awsFaults.length) / Math.max(1, awsRequests)).toFixed(2)}%; ` +
          `${JSON.stringify(countBy(awsFaults, (f) => f.service))}; ${JSON.stringify(countBy(awsFaults, (f) => f.fault))}; ` +
          `${awsFaults.filter((f) => f.applied).length} carried out with the answer lost; ` +
          `calls failed after the SDK's retries: ${surfaced.length} ${JSON.stringify(countBy(surfaced, (e) => `${e.service} ${e.operation}`))}`,
        `PATCHes while the loop ran: ${patches} (overlapPolicy and delivery)`,
        `lost jobs: ${books.lost.length}`,
        `due runs: ${books.dueRuns} — ${JSON.stringify(books.byStatus)}; unaccounted: ${books.unaccounted.length}; unexpected: ${books.unexpected.length}`,
        `missed and cancelled, by reason: ${JSON.stringify(books.missedReasons)}`,
        `executions: ${books.executions}; duplicate executions (completion never accepted, run again or lapsed): ` +
          `${books.duplicateExecutions}; runs whose handler succeeded twice: ${books.doubleSuccesses} ` +
          `(unexplained: ${books.unexplainedDoubleSuccesses.length})`,
        `executions without an accepted completion: ${books.unacceptedExecutions} (bound: ${books.duplicateBound} executions in flight during a fault), ` +
          `explained by ${JSON.stringify(books.explainedBy)}; unexplained: ${books.unexplainedDuplicates.length}`,
        `completions: ${JSON.stringify(books.completions)}; stale-fence completions accepted: ${books.staleAccepted.length}; ` +
          `succeeded where no worker succeeded: ${books.outcomeWithoutCompletion.length}`,
        `final run status by kind: ${JSON.stringify(books.byKind)}; not as the kind says: ${books.wrongFinalStatus.length}`,
        `maxLateness runs leased in time but begun past it by their worker (late hand-over; not asserted): ${books.startedPastMaxLateness.length}` +
          (books.startedPastMaxLateness.length > 0
            ? ` (${books.startedPastMaxLateness.slice(0, 3).join("; ")})`
            : ""),
        `jobs left active with nothing to run: ${books.activeWithNothingToRun.length}`,
        `at-most-once: ${books.atMostOnceLost} run(s) recorded lost, ${books.atMostOnceRepeated.length} executed twice`,
        `push: ${accepted.filter((j) => j.kind.startsWith("push")).length} jobs, ${books.pushDeliveries} deliveries, ` +
          `${books.pushRepeated} delivered again (at least once: a kill mid-delivery, or a retry; unexplained ${books.unexplainedPushRepeats.length}), ` +
          `${receiver.unsigned()} with no valid signature`,
        `jobs by tenant: A ${accepted.filter((j) => j.tenant === "a").length}, B ${accepted.filter((j) => j.tenant === "b").length}; ` +
          `executions by worker: ${JSON.stringify(Object.fromEntries(CHAOS_WORKERS.map((w) => [w.id, events.filter((e) => e.e === "start" && e.worker === w.id).length])))}; ` +
          `cross-tenant executions: ${books.crossTenant.length}; executions started before due: ${books.startedEarly.length}`,
        `drain after the last restart: ${(drainMs / 1000).toFixed(1)} s; whole test ${minutes} min`,
      ].join("\n"),
    );
    const kindOf = new Map(accepted.map((job) => [job.jobId, job.kind]));
    const problems = [
      ...books.lost.map((id) => `lost: ${id}`),
      ...books.unaccounted,
      ...books.unexpected,
      ...books.staleAccepted,
      ...books.outcomeWithoutCompletion,
      ...books.crossTenant,
      ...books.startedEarly,
      ...books.atMostOnceRepeated,
      ...books.wrongFinalStatus,
      ...books.unexplainedDuplicates,
      ...books.unexplainedDoubleSuccesses,
      ...books.unexplainedPushRepeats,
      ...books.activeWithNothingToRun.map(
        (id) =>
          `${id} (${kindOf.get(id)}): active with nothing to run; runs ${JSON.stringify(states.get(id)?.runs.map((r) => [r.scheduledFor, r.status, r.fence, r.error]))}`,
      ),
    ];
    for (const line of problems.slice(0, 40)) console.log(`  ${line}`);
    if (problems.length > 0) {
      for (const line of books.unaccounted.slice(0, 10)) {
        const [jobId] = line.split("@");
        console.log(`  ${jobId} rows: ${JSON.stringify(states.get(jobId ?? "")?.runs)}`);
      }
      outputs.push(runtime.output());
      writeFileSync(runtimeLog, outputs.join("\n===== restart =====\n"));
    }

    expect(faults.runtimeKills).toBeGreaterThanOrEqual(20);
    expect(books.jobs).toBeGreaterThanOrEqual(500);
    expect(books.lost).toEqual([]);
    expect(books.unaccounted).toEqual([]);
    expect(books.unexpected).toEqual([]);
    expect(books.staleAccepted).toEqual([]);
    expect(books.outcomeWithoutCompletion).toEqual([]);
    expect(books.activeWithNothingToRun).toEqual([]);
    expect(books.crossTenant).toEqual([]);
    expect(books.startedEarly).toEqual([]);
    expect(books.atMostOnceRepeated).toEqual([]);
    expect(books.wrongFinalStatus).toEqual([]);
    expect(books.unexplainedDuplicates).toEqual([]);
    expect(books.unacceptedExecutions).toBeLessThanOrEqual(books.duplicateBound);
    expect(books.unexplainedDoubleSuccesses).toEqual([]);
    expect(books.unexplainedPushRepeats).toEqual([]);
    expect(books.executions).toBeGreaterThan(0);
    expect(books.pushDeliveries).toBeGreaterThan(0);
    expect(receiver.unsigned()).toBe(0);
    expect(patches).toBeGreaterThanOrEqual(8);
    if (FAULT_RATE > 0) {
      // The injection ran at about the asked rate (the tally misses each runtime life's last
      // requests, so the share is a little high).
      expect(awsFaults.length / awsRequests).toBeGreaterThan(FAULT_RATE / 2);
      expect(awsFaults.length / awsRequests).toBeLessThan(FAULT_RATE * 2);
    }
    passed = true;
  });
});
