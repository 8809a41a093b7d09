import type { Server } from "node:http";
import { DeleteQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { laneListenResponse } from "@jobsched/contract";
import { createSignedFetch, createWorker, type Worker } from "@jobsched/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiHandler } from "../../lambdas/handlers/api";
import type { HttpEvent } from "../../lambdas/handlers/http/request";
import { createInternalHandler } from "../../lambdas/handlers/internal";
import { startHttpGateway } from "../../local/http-gateway";
import { loadLocalCredentials } from "../../local/local-credentials";
import { contractChecked } from "../support/response-contract";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * Decision 0049 end to end on the emulators: an idle worker waits on its lanes in SQS instead
 * of asking for leases every second or two, a run that comes is leased at once, and a lane
 * deleted under it is reported and made again.
 */
describe("idle workers listening on their lanes", () => {
  let stack: TestStack;
  let server: Server;
  let url: string;
  const credentials = loadLocalCredentials();
  const worker = credentials.byAccessKey.get("AKIAJOBSCHEDWORKER01");
  const tenantKey = [...credentials.byAccessKey.values()].find((c) => c.kind === "tenant")?.accessKeyId;
  /** The worker-facing routes called, with their bodies, in order. */
  const calls: Array<{ route: string; body: unknown }> = [];
  const running: Worker[] = [];
  /** Answers the OpenAPI document does not describe. */
  const mismatches: string[] = [];

  beforeAll(async () => {
    stack = await createTestStack("lane-listening");
    const internal = contractChecked(createInternalHandler(stack.deps), mismatches);
    const gateway = await startHttpGateway(
      {
        api: createApiHandler(stack.deps),
        internal: (event: HttpEvent, context: Parameters<typeof internal>[1]) => {
          calls.push({ route: event.routeKey, body: event.body ? JSON.parse(event.body) : undefined });
          return internal(event, context);
        },
      },
      { port: 0, credentials },
    );
    server = gateway.server;
    url = gateway.url;
  });
  afterAll(async () => {
    await Promise.all(running.map((w) => w.stop()));
    server.closeAllConnections();
    await new Promise((done) => server.close(() => done(undefined)));
    expect(mismatches).toEqual([]);
  });

  const tenant = () => {
    const key = credentials.byAccessKey.get(tenantKey ?? "");
    if (!key) throw new Error("no dev tenant");
    return createSignedFetch({ endpoint: url, region: credentials.region, credentials: key });
  };
  const count = (route: string) => calls.filter((c) => c.route === route).length;
  const until = async (what: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !what() && Date.now() < end; )
      await new Promise((d) => setTimeout(d, 100));
    return what();
  };
  const startWorker = (
    type: string,
    ran: Array<{ jobId: string; at: number }>,
    workerId = `listen-${type}`,
  ) => {
    if (!worker) throw new Error("no dev worker");
    const w = createWorker({
      endpoint: url,
      region: credentials.region,
      credentials: worker,
      types: [type],
      concurrency: 2,
      workerId,
      stopOnSignals: false,
      log: () => undefined,
      handler: async (run) => {
        ran.push({ jobId: run.jobId, at: Date.now() });
      },
    });
    running.push(w);
    return w;
  };
  const create = async (type: string) => {
    const response = await tenant()("POST", "/api/v1/jobs", {
      body: { type, runAt: new Date(Date.now() + 1_000).toISOString(), payload: {} },
    });
    expect(response.status).toBe(201);
    return (response.body as { jobId: string }).jobId;
  };

  it("waits on its lane without lease requests, and leases a run as soon as it comes", {
    timeout: 60_000,
  }, async () => {
    const ran: Array<{ jobId: string; at: number }> = [];
    startWorker("listened", ran);
    expect(await until(() => count("POST /internal/lanes") === 1, 10_000)).toBe(true);
    const leasesBefore = count("POST /internal/leases");
    await new Promise((done) => setTimeout(done, 8_000));
    // Polling, it would have asked 4-30 times in 8 s (a pause of 0.25-2 s between empty answers).
    expect(count("POST /internal/leases") - leasesBefore).toBe(0);
    const jobId = await create("listened");
    // Far sooner than the worker's 5-minute fallback lease request: the lane rang.
    expect(await until(() => ran.some((r) => r.jobId === jobId), 20_000)).toBe(true);
    expect(count("POST /internal/leases") - leasesBefore).toBeLessThanOrEqual(3);
  });

  it("with four workers listening on one lane, each run is leased once and on time: the peeks never keep it from the lease step", {
    timeout: 90_000,
  }, async () => {
    const ran: Array<{ jobId: string; at: number }> = [];
    for (let i = 0; i < 4; i++) startWorker("crowded", ran, `crowded-${i}`);
    expect(
      await until(
        () =>
          calls.filter((c) => c.route === "POST /internal/lanes" && isFor(c.body, "crowded")).length === 4,
        10_000,
      ),
    ).toBe(true);
    await new Promise((done) => setTimeout(done, 2_000)); // all four listening
    const due = Date.now() + 3_000;
    const jobIds = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const response = await tenant()("POST", "/api/v1/jobs", {
          body: { type: "crowded", runAt: new Date(due).toISOString(), payload: {} },
        });
        expect(response.status).toBe(201);
        return (response.body as { jobId: string }).jobId;
      }),
    );
    expect(await until(() => jobIds.every((id) => ran.some((r) => r.jobId === id)), 40_000)).toBe(true);
    await new Promise((done) => setTimeout(done, 2_000));
    // Once each, and well within the seconds a due run may take to start (a livelock between
    // peeks and the lease step would hold them for rounds of 20 s, or lose them to the DLQ).
    expect(ran.filter((r) => jobIds.includes(r.jobId))).toHaveLength(6);
    for (const r of ran.filter((r) => jobIds.includes(r.jobId))) expect(r.at - due).toBeLessThan(5_000);
    // The lease requests after each ring named the lane that rang.
    expect(
      calls.some((c) => c.route === "POST /internal/leases" && (c.body as { prefer?: unknown }).prefer),
    ).toBe(true);
  });

  it("reports a lane deleted under it, gets it made again, and leases from it", {
    timeout: 90_000,
  }, async () => {
    const ran: Array<{ jobId: string; at: number }> = [];
    startWorker("deleted", ran);
    expect(
      await until(
        () => calls.some((c) => c.route === "POST /internal/lanes" && isFor(c.body, "deleted")),
        10_000,
      ),
    ).toBe(true);
    if (!worker) throw new Error("no dev worker");
    const answer = await createSignedFetch({
      endpoint: url,
      region: credentials.region,
      credentials: worker,
    })("POST", "/internal/lanes", { body: { workerId: "probe", types: ["deleted"] } });
    const lane = laneListenResponse.parse(answer.body).lanes[0]?.queueUrl;
    if (!lane) throw new Error("no lane");
    await stack.sqs.send(new DeleteQueueCommand({ QueueUrl: lane }));
    // The worker finds it gone on its next poll and says so when it asks for its lanes again.
    expect(
      await until(
        () => calls.some((c) => c.route === "POST /internal/lanes" && goneOf(c.body).includes(lane)),
        40_000,
      ),
    ).toBe(true);
    // Made again by that ask, before any sender needed it.
    const exists = async () =>
      stack.sqs.send(new GetQueueAttributesCommand({ QueueUrl: lane })).then(
        () => true,
        () => false,
      );
    let made = false;
    for (let i = 0; i < 50 && !made; i++) {
      made = await exists();
      if (!made) await new Promise((d) => setTimeout(d, 100));
    }
    expect(made).toBe(true);
    const jobId = await create("deleted");
    expect(await until(() => ran.some((r) => r.jobId === jobId), 30_000)).toBe(true);
  });
});

function isFor(body: unknown, type: string): boolean {
  return ((body as { types?: string[] } | undefined)?.types ?? []).includes(type);
}
function goneOf(body: unknown): string[] {
  return (body as { gone?: string[] } | undefined)?.gone ?? [];
}
