import { GetQueueUrlCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { GetCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { createJobResponse } from "@jobsched/contract";
import { afterAll, describe, expect, it } from "vitest";
import { LaneDirectory } from "../../lambdas/adapters/sqs/lane-directory";
import { LaneJanitor } from "../../lambdas/adapters/sqs/lane-janitor";
import { laneEntryKey, queueNameOf } from "../../lambdas/adapters/sqs/lane-keys";
import { SqsRunQueue } from "../../lambdas/adapters/sqs/sqs-run-queue";
import type { RunMessage } from "../../lambdas/core/ports";
import { retireIdleLanes } from "../../lambdas/core/use-cases/retire-idle-lanes";
import { startTestApi, type TestApi } from "../support/api-gateway";
import { bodyOf } from "../support/bodies";
import { OffsetClock } from "../support/offset-clock";
import { createTestStack, laneQueueUrls, type TestStack } from "../support/stack";

/**
 * Idle lanes deleted (issue 15, decision 0019) on dynalite and fauxqs: an empty lane no sender
 * used since the cut-off goes (queue, lookup record; its registry entry kept as a tombstone),
 * a lane holding a message stays, a send at any point of the deletion wins, a janitor killed
 * midway is finished by the next pass, and a later send makes the next generation, which
 * workers receive from. The deleted lane's type goes back to the tenant's quota.
 */
const DAY = 86_400_000;
let sequence = 0;

function message(tenant: string, type: string): { message: RunMessage; delaySeconds: number } {
  sequence += 1;
  return {
    message: { runId: `r_${sequence}`, jobId: `j_${sequence}`, scheduledFor: sequence, tenant, type },
    delaySeconds: 0,
  };
}

/** An SQS client that runs `before` ahead of each command of the given name. */
function hooked(sqs: SQSClient, name: string, before: () => Promise<void>): SQSClient {
  return new Proxy(sqs, {
    get(target, prop, receiver) {
      if (prop !== "send") return Reflect.get(target, prop, receiver);
      return async (command: { constructor: { name: string } }) => {
        if (command.constructor.name === name) await before();
        return (target.send as (c: unknown) => Promise<unknown>)(command);
      };
    },
  });
}

/** Another process's view of the lanes: a queue of its own over the same table and SQS. */
function process(stack: TestStack, sqs: SQSClient = stack.sqs) {
  const directory = new LaneDirectory(sqs, stack.db, stack.config.tableName, stack.config.runQueueUrl);
  return { directory, queue: new SqsRunQueue(sqs, directory, "", async () => undefined) };
}

/**
 * What a worker polling the lane gets, as the lease step receives it. A poll that meets a deleted
 * queue (its lane list is cached for 2 s) drops that list; the worker's next poll reads it again.
 */
async function receiveAll(stack: TestStack, tenant: string, type: string) {
  for (let poll = 0; poll < 2; poll++) {
    const received = await stack.deps.queue.receive({
      types: [type],
      tenants: [tenant],
      max: 10,
      visibilitySeconds: 30,
      waitSeconds: 1,
      topUpDueBefore: Number.MAX_SAFE_INTEGER,
    });
    await stack.deps.queue.deleteBatch(received.map((r) => r.receiptHandle));
    if (received.length > 0) return received.map((r) => r.message?.runId);
  }
  return [];
}

async function queueExists(stack: TestStack, url: string): Promise<boolean> {
  try {
    await stack.sqs.send(new GetQueueUrlCommand({ QueueName: queueNameOf(url) }));
    return true;
  } catch {
    return false;
  }
}

async function entryOf(stack: TestStack, tenant: string, type: string) {
  const { Item } = await stack.db.send(
    new GetCommand({
      TableName: stack.config.tableName,
      Key: laneEntryKey(tenant, type),
      ConsistentRead: true,
    }),
  );
  return Item;
}

/** A pass that takes every lane as idle (the cut-off is now), as one would days later. */
const everyLane = (queue: { retireIdleLanes: SqsRunQueue["retireIdleLanes"] }) =>
  queue.retireIdleLanes(Date.now() + 1, Date.now(), 30_000);

describe("idle lanes", () => {
  it("deletes an empty idle lane, and the next send makes its next generation, which workers receive", async () => {
    const stack = await createTestStack("idle-lane");
    await stack.deps.queue.send([message("t1", "report")]);
    const [first] = await laneQueueUrls(stack, "report");
    if (!first) throw new Error("no lane");
    expect(await receiveAll(stack, "t1", "report")).toHaveLength(1);
    // A second process sent to the lane earlier and still holds its URL.
    const other = process(stack);
    await other.queue.send([message("t1", "report")]);
    await receiveAll(stack, "t1", "report");

    // Act
    const result = await everyLane(stack.deps.queue);

    // Assess: the queue and the lookup record are gone; the entry keeps the generation.
    expect(result).toMatchObject({ retired: [{ tenant: "t1", type: "report" }], kept: 0, errors: [] });
    expect(await queueExists(stack, first)).toBe(false);
    expect(await laneQueueUrls(stack, "report")).toEqual([]);
    expect(await entryOf(stack, "t1", "report")).toMatchObject({
      generation: 0,
      deletedAt: expect.any(Number),
    });

    // The process with the stale URL sends: the run goes to generation 1, and a worker gets it.
    await other.queue.send([message("t1", "report")]);
    const [second] = await laneQueueUrls(stack, "report");
    expect(second).toMatch(/-1$/);
    expect(await entryOf(stack, "t1", "report")).toMatchObject({ generation: 1, queueUrl: second });
    expect(await receiveAll(stack, "t1", "report")).toHaveLength(1);
    // The janitor's own process sends too: same generation.
    await stack.deps.queue.send([message("t1", "report")]);
    expect(await laneQueueUrls(stack, "report")).toEqual([second]);
    expect(await receiveAll(stack, "t1", "report")).toHaveLength(1);
  }, 60_000);

  it("keeps an idle lane whose queue still holds a message (a type no worker serves)", async () => {
    const stack = await createTestStack("idle-busy");
    await stack.deps.queue.send([message("t1", "unserved")]);
    const [url] = await laneQueueUrls(stack, "unserved");

    const result = await everyLane(stack.deps.queue);

    expect(result).toMatchObject({ retired: [], kept: 1, errors: [] });
    expect(await queueExists(stack, url ?? "")).toBe(true);
    const entry = await entryOf(stack, "t1", "unserved");
    expect(entry?.retiringAt).toBeUndefined();
    expect(entry?.deleting).toBeUndefined();
    expect(await receiveAll(stack, "t1", "unserved")).toHaveLength(1);
  }, 60_000);

  it("keeps the lane when a sender uses it between the janitor's claim and its check", async () => {
    const stack = await createTestStack("idle-race");
    await stack.deps.queue.send([message("t1", "race")]);
    await receiveAll(stack, "t1", "race");
    const [url] = await laneQueueUrls(stack, "race");
    // A process that has not used the lane yet sends while the janitor reads the queue's counts.
    const sender = process(stack);
    let sent = false;
    const janitor = new LaneJanitor(
      hooked(stack.sqs, "GetQueueAttributesCommand", async () => {
        if (sent) return;
        sent = true;
        await sender.queue.send([message("t1", "race")]);
      }),
      stack.db,
      stack.config.tableName,
    );

    const result = await janitor.retireIdle(Date.now() + 1, Date.now(), 30_000);

    expect(sent).toBe(true);
    expect(result.retired).toEqual([]);
    expect(await queueExists(stack, url ?? "")).toBe(true);
    expect(await receiveAll(stack, "t1", "race")).toHaveLength(1);
  }, 60_000);

  it("finishes a deletion whose janitor was killed after the confirm; a send meanwhile goes to the next generation", async () => {
    const stack = await createTestStack("idle-killed");
    for (const type of ["alone", "shared"]) {
      await stack.deps.queue.send([message("t1", type)]);
      await receiveAll(stack, "t1", type);
    }
    const [alone] = await laneQueueUrls(stack, "alone");
    const [shared] = await laneQueueUrls(stack, "shared");
    const killed = new LaneJanitor(
      hooked(stack.sqs, "DeleteQueueCommand", async () => {
        throw new Error("killed before DeleteQueue");
      }),
      stack.db,
      stack.config.tableName,
    );
    const first = await killed.retireIdle(Date.now() + 1, Date.now(), 30_000);
    expect(first.retired).toEqual([]);
    expect(first.errors).toHaveLength(2);
    expect(await entryOf(stack, "t1", "alone")).toMatchObject({ deleting: true });

    // A sender of "shared" finds the lane being deleted: it makes generation 1 instead.
    const sender = process(stack);
    await sender.queue.send([message("t1", "shared")]);
    const [next] = await laneQueueUrls(stack, "shared");
    expect(next).toMatch(/-1$/);

    // The next pass (a minute or an hour later) finishes both deletions.
    const second = await new LaneJanitor(stack.sqs, stack.db, stack.config.tableName).retireIdle(
      Date.now() - DAY,
      Date.now(),
      30_000,
    );
    expect(second.errors).toEqual([]);
    expect(second.retired).toEqual([{ tenant: "t1", type: "alone" }]);
    expect(await queueExists(stack, alone ?? "")).toBe(false);
    expect(await queueExists(stack, shared ?? "")).toBe(false);
    expect(await laneQueueUrls(stack, "alone")).toEqual([]);
    expect(await laneQueueUrls(stack, "shared")).toEqual([next]);
    expect(await entryOf(stack, "t1", "shared")).toMatchObject({ generation: 1, queueUrl: next });
    expect(await receiveAll(stack, "t1", "shared")).toHaveLength(1);
  }, 60_000);

  it("drops a deleted lane's tombstone after a day, after which the lane starts again at generation 0", async () => {
    const stack = await createTestStack("idle-tombstone");
    await stack.deps.queue.send([message("t1", "old")]);
    await receiveAll(stack, "t1", "old");
    await everyLane(stack.deps.queue);
    expect(await entryOf(stack, "t1", "old")).toMatchObject({ deletedAt: expect.any(Number) });

    await stack.deps.queue.retireIdleLanes(Date.now() - DAY, Date.now() + DAY + 1, 30_000);

    expect(await entryOf(stack, "t1", "old")).toBeUndefined();
  }, 60_000);
});

describe("the hourly pass and the types quota", () => {
  const apis: TestApi[] = [];
  afterAll(() => Promise.all(apis.map((api) => api.close())));

  it("gives a deleted lane's type back when no active or paused job has it, and keeps a type in use", async () => {
    const clock = new OffsetClock();
    const stack = await createTestStack("idle-quota", {
      clock,
      settings: { tenantMaxJobTypes: 2, idleLaneDays: 7 },
    });
    const api = await startTestApi(stack, { throttleRetries: 0 });
    apis.push(api);
    const create = (type: string) =>
      api.tenantA("POST", "/api/v1/jobs", {
        body: { type, runAt: new Date(clock.now() + 3_600_000).toISOString() },
      });
    const gone = await create("gone");
    expect(gone.status).toBe(201);
    expect((await create("kept")).status).toBe(201);
    expect((await create("third")).status).toBe(429);
    const goneId = bodyOf(createJobResponse, gone).jobId;
    expect((await api.tenantA("DELETE", `/api/v1/jobs/${goneId}`)).status).toBe(200);
    const { Items = [] } = await stack.db.send(
      new ScanCommand({
        TableName: stack.config.tableName,
        FilterExpression: "sk = :job",
        ExpressionAttributeValues: { ":job": "JOB" },
      }),
    );
    const tenant = String(Items[0]?.tenant);
    // Both types had runs once; their lanes are empty now.
    for (const type of ["gone", "kept"]) {
      await stack.deps.queue.send([message(tenant, type)]);
      await receiveAll(stack, tenant, type);
    }

    // Eight days on, the pass deletes both lanes; one type is free again.
    clock.advance(8 * DAY);
    const result = await retireIdleLanes(stack.deps);

    expect(result?.retired).toHaveLength(2);
    expect(await laneQueueUrls(stack, "gone")).toEqual([]);
    expect(await laneQueueUrls(stack, "kept")).toEqual([]);
    expect((await create("third")).status).toBe(201);
    expect((await create("fourth")).status).toBe(429);
  }, 60_000);

  it("keeps lanes used within idleLaneDays, and every lane when idleLaneDays is 0", async () => {
    const clock = new OffsetClock();
    const stack = await createTestStack("idle-recent", { clock, settings: { idleLaneDays: 7 } });
    await stack.deps.queue.send([message("t1", "recent")]);
    await receiveAll(stack, "t1", "recent");

    clock.advance(6 * DAY);
    expect((await retireIdleLanes(stack.deps))?.retired).toEqual([]);
    clock.advance(2 * DAY);
    const never = { ...stack.deps, settings: { ...stack.deps.settings, idleLaneDays: 0 } };
    expect(await retireIdleLanes(never)).toBeUndefined();

    expect(await laneQueueUrls(stack, "recent")).toHaveLength(1);
  }, 60_000);
});
