import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import {
  DynamoTenantQuotas,
  KNOWN_TYPES_MS,
  RECOUNT_EVERY_MS,
} from "../../lambdas/adapters/dynamo/dynamo-tenant-quotas";
import { TENANT_INDEX } from "../../lambdas/definitions/table";
import { placeholderProblems } from "../support/expression-rules";

/** The quota adapter's requests, against a mocked DynamoDB (issue 15). */
const db = mockClient(DynamoDBDocumentClient);
const client = db as unknown as DynamoDBDocumentClient;
const NOW = Date.UTC(2026, 10, 2, 9, 0, 0, 500);
const SECOND = Math.floor(NOW / 1000);
const limits = {
  tenantCreatesPerSecond: 2,
  tenantMaxActiveJobs: 10,
  tenantMaxJobTypes: 3,
  runRetentionDays: 90,
};
type UpdateInput = {
  ConditionExpression?: string;
  ExpressionAttributeValues?: Record<string, number | undefined>;
};
/** A clock that answers one instant. */
const at = (instant: number) => ({ now: () => instant });
const conditionFailed = () => new ConditionalCheckFailedException({ message: "no", $metadata: {} });

const updates = () => db.commandCalls(UpdateCommand).map((c) => c.args[0].input);
/** A page of the tenant index: keys only (and the type), as it is projected (decision 0047). */
const indexPage = (ids: string[], last?: Record<string, unknown>) => ({
  Items: ids.map((id) => ({ pk: `JOB#${id}`, sk: "JOB", jobTenant: "a", createdAt: 1, type: "x" })),
  ...(last ? { LastEvaluatedKey: last } : {}),
});
/** BatchGetItem answers with each asked job's item, its status from `statuses` (by job id). */
function jobsWithStatuses(statuses: Record<string, string>) {
  db.on(BatchGetCommand).callsFake((input: { RequestItems: Record<string, { Keys: { pk: string }[] }> }) => {
    const [table, asked] = Object.entries(input.RequestItems)[0] ?? ["", { Keys: [] }];
    return {
      Responses: {
        [table]: asked.Keys.map((key) => ({ pk: key.pk, sk: "JOB", status: statuses[key.pk.slice(4)] })),
      },
    };
  });
}
/** Every request sent: each expression's placeholders given and used exactly (DynamoDB's rule). */
function expectValidExpressions() {
  for (const call of db.calls()) {
    expect(placeholderProblems(call.args[0].input as Record<string, unknown>)).toEqual([]);
  }
}

/** The refusal of a create by the creates-per-second rate of `limits`. */
const RATE_REFUSAL = { admitted: false, quota: "creates-per-second", limit: 2, retryAfterSeconds: 1 };
/**
 * The COUNTS item's conditions against a stored window, as DynamoDB would judge them: opening a
 * window needs a later second, adding to it the same second with room for the block.
 */
function countsWindow(stored: { readonly second: number; readonly creates: number }) {
  db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "COUNTS" } }).callsFake((input: UpdateInput) => {
    const values = input.ExpressionAttributeValues ?? {};
    const second = values[":second"] ?? Number.NaN;
    const opening = String(input.ConditionExpression).includes("#second < :second");
    const fits = opening
      ? second > stored.second
      : second === stored.second && stored.creates <= (values[":rate"] ?? Number.NaN);
    if (!fits) throw conditionFailed();
    return {};
  });
}

beforeEach(() => db.reset());

describe("DynamoTenantQuotas", () => {
  it("counts a create in one conditional update: a new second opens the window, the next adds to it", async () => {
    db.on(UpdateCommand).resolves({});
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    const [types, opening, adding] = updates();
    expect(types).toMatchObject({
      Key: { pk: "QUOTA#a", sk: "TYPES" },
      UpdateExpression: "ADD #types :type",
    });
    expect(opening).toMatchObject({
      Key: { pk: "QUOTA#a", sk: "COUNTS" },
      UpdateExpression: "SET #second = :second, #creates = :one ADD activeJobs :one",
      ConditionExpression:
        "(attribute_not_exists(activeJobs) OR activeJobs <= :max) AND (attribute_not_exists(#second) OR #second < :second)",
    });
    expect(adding).toMatchObject({
      UpdateExpression: "ADD #creates :one, activeJobs :one",
      ConditionExpression:
        "(attribute_not_exists(activeJobs) OR activeJobs <= :max) AND #second = :second AND #creates <= :rate",
      // Room for one more: creates + 1 <= 2, activeJobs + 1 <= 10.
      ExpressionAttributeValues: { ":rate": 1, ":max": 9, ":second": SECOND, ":one": 1 },
    });
    expect(updates()).toHaveLength(3); // the type is remembered: written once
    expectValidExpressions();
  });

  it("counts a busy second's creates in growing blocks, and the next second starts at what the last one used", async () => {
    db.on(UpdateCommand).resolves({});
    const roomy = {
      tenantCreatesPerSecond: 200,
      tenantMaxActiveJobs: 1_000,
      tenantMaxJobTypes: 3,
      runRetentionDays: 90,
    };
    const quotas = new DynamoTenantQuotas(client, "t", roomy, () => NOW);
    for (let i = 0; i < 50; i++)
      expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    const blocks = () =>
      updates()
        .filter((u) => u.Key?.sk === "COUNTS")
        .map((u) => u.ExpressionAttributeValues?.[":one"]);
    // Each block as large as the creates admitted so far this second, at most 25.
    expect(blocks()).toEqual([1, 1, 2, 4, 8, 16, 25]);
    const counts = updates().filter((u) => u.Key?.sk === "COUNTS");
    expect(counts.at(-1)?.ExpressionAttributeValues).toMatchObject({ ":rate": 175, ":max": 975 });
    db.resetHistory();
    expect(await quotas.admitCreate("a", "x", at(NOW + 1_000))).toEqual({ admitted: true });
    expect(blocks()).toEqual([25]);
    // After a quiet spell, one token: a burst long ago says nothing about now.
    db.resetHistory();
    expect(await quotas.admitCreate("a", "x", at(NOW + 60_000))).toEqual({ admitted: true });
    expect(blocks()).toEqual([1]);
    expectValidExpressions();
  });

  it("shares one block between creates side by side: one write at a time per tenant", async () => {
    db.on(UpdateCommand).resolves({});
    const roomy = {
      tenantCreatesPerSecond: 200,
      tenantMaxActiveJobs: 1_000,
      tenantMaxJobTypes: 3,
      runRetentionDays: 90,
    };
    const quotas = new DynamoTenantQuotas(client, "t", roomy, () => NOW);
    await quotas.admitCreate("a", "x", at(NOW)); // the type, recorded once
    db.resetHistory();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => quotas.admitCreate("a", "x", at(NOW))),
    );
    expect(answers.every((a) => a.admitted)).toBe(true);
    const sizes = updates().map((u) => u.ExpressionAttributeValues?.[":one"]);
    // 1 (the first create) + 1 + 2 + 4 + 8 + 16 tokens: 31 >= 21, in 5 writes, never one per create.
    expect(sizes).toEqual([1, 2, 4, 8, 16]);
  });

  it("takes one token when a whole block does not fit the second's rate", async () => {
    const roomy = {
      tenantCreatesPerSecond: 200,
      tenantMaxActiveJobs: 1_000,
      tenantMaxJobTypes: 3,
      runRetentionDays: 90,
    };
    db.on(UpdateCommand).resolves({});
    db.on(UpdateCommand, {
      Key: { pk: "QUOTA#a", sk: "COUNTS" },
      ExpressionAttributeValues: { ":one": 2 },
    }).rejects(conditionFailed());
    const quotas = new DynamoTenantQuotas(client, "t", roomy, () => NOW);
    for (let i = 0; i < 3; i++)
      expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    const sizes = updates()
      .filter((u) => u.Key?.sk === "COUNTS")
      .map((u) => u.ExpressionAttributeValues?.[":one"]);
    // The third create asks for 2 (refused both ways), then takes 1.
    expect(sizes).toEqual([1, 1, 2, 2, 1]);
  });

  it("counts a create that arrived in an earlier second in the stored window, not in its own (refused far below the rate before)", async () => {
    const roomy = {
      tenantCreatesPerSecond: 200,
      tenantMaxActiveJobs: 1_000,
      tenantMaxJobTypes: 3,
      runRetentionDays: 90,
    };
    db.on(UpdateCommand).resolves({});
    // Another process moved the stored window to the next second, with 7 creates in it: a count
    // in this create's own second fails both ways (opening needs a later second, adding the same).
    countsWindow({ second: SECOND + 1, creates: 7 });
    db.on(GetCommand).resolves({ Item: { second: SECOND + 1, creates: 7, activeJobs: 40 } });
    const quotas = new DynamoTenantQuotas(client, "t", roomy, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    const counts = updates().filter((u) => u.Key?.sk === "COUNTS");
    expect(counts.at(-1)?.ExpressionAttributeValues).toMatchObject({ ":second": SECOND + 1, ":rate": 199 });
    expect(counts.at(-1)?.ConditionExpression).toContain("#second = :second");
    expectValidExpressions();
  });

  it("counts a create that waited for a block past the second's turn in the second it is admitted in", async () => {
    const roomy = {
      tenantCreatesPerSecond: 200,
      tenantMaxActiveJobs: 1_000,
      tenantMaxJobTypes: 3,
      runRetentionDays: 90,
    };
    let clock = NOW;
    const quotas = new DynamoTenantQuotas(client, "t", roomy, () => NOW);
    const moving = { now: () => clock };
    db.on(UpdateCommand).resolves({});
    await quotas.admitCreate("a", "x", moving); // the type and a first token
    db.resetHistory();
    let release: () => void = () => undefined;
    db.on(UpdateCommand)
      .callsFakeOnce(() => new Promise((done) => (release = () => done({}))))
      .resolves({});
    const first = quotas.admitCreate("a", "x", moving);
    await new Promise((tick) => setTimeout(tick, 0));
    const second = quotas.admitCreate("a", "x", moving); // waits for the first one's block
    clock = NOW + 1_000;
    release();
    expect(await Promise.all([first, second])).toEqual([{ admitted: true }, { admitted: true }]);
    const seconds = updates().map((u) => u.ExpressionAttributeValues?.[":second"]);
    expect(seconds).toEqual([SECOND, SECOND + 1]);
  });

  it("judges a late create's rate in the stored window: full there is a refusal", async () => {
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "COUNTS" } }).rejects(conditionFailed());
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "TYPES" } }).resolves({});
    db.on(GetCommand).resolves({ Item: { second: SECOND + 1, creates: 2, activeJobs: 4 } });
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual(RATE_REFUSAL);
    // Its own second's two forms, then the refusal read: no round in a window already closed.
    expect(updates().filter((u) => u.Key?.sk === "COUNTS")).toHaveLength(2);
  });

  it("counts a create whose second turned while it was counted in the new second, not the full one it asked in", async () => {
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "TYPES" } }).resolves({});
    countsWindow({ second: SECOND, creates: 2 });
    db.on(GetCommand).resolves({ Item: { second: SECOND, creates: 2, activeJobs: 4 } });
    // The clock reads NOW when the create asks, and a second later once its counts were refused.
    let reads = 0;
    const turning = { now: () => (reads++ === 0 ? NOW : NOW + 1_000) };
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", turning)).toEqual({ admitted: true });
    const last = updates()
      .filter((u) => u.Key?.sk === "COUNTS")
      .at(-1);
    expect(last?.ExpressionAttributeValues?.[":second"]).toBe(SECOND + 1);
  });

  it("takes a token of the block this process holds for a later second for a create that arrived before it", async () => {
    db.on(UpdateCommand).resolves({});
    const roomy = {
      tenantCreatesPerSecond: 200,
      tenantMaxActiveJobs: 1_000,
      tenantMaxJobTypes: 3,
      runRetentionDays: 90,
    };
    const quotas = new DynamoTenantQuotas(client, "t", roomy, () => NOW);
    for (let i = 0; i < 5; i++) await quotas.admitCreate("a", "x", at(NOW + 1_000));
    db.resetHistory();
    // Blocks of 1, 1, 2 and 4 so far (8 tokens for 5 creates): three are left.
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    expect(updates()).toEqual([]);
  });

  it("refuses for the rate when this second's count is full, with Retry-After 1", async () => {
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "COUNTS" } }).rejects(conditionFailed());
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "TYPES" } }).resolves({});
    db.on(GetCommand).resolves({ Item: { second: SECOND, creates: 2, activeJobs: 4 } });
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual(RATE_REFUSAL);
    expectValidExpressions();
  });

  it("recounts a full active-jobs count from the tenant index, adds the difference, and admits if there is room", async () => {
    let full = true;
    db.on(UpdateCommand).callsFake((input: { Key: { sk: string }; UpdateExpression: string }) => {
      if (input.Key.sk === "COUNTS" && input.UpdateExpression.includes(":delta")) full = false;
      else if (input.Key.sk === "COUNTS" && input.UpdateExpression.includes("recountedAt")) return {};
      else if (input.Key.sk === "COUNTS" && full) throw conditionFailed();
      return {};
    });
    db.on(GetCommand).resolves({ Item: { second: SECOND - 5, creates: 1, activeJobs: 10 } });
    // 7 of the 9 jobs may still fire: active or paused; the completed and cancelled are not counted.
    db.on(QueryCommand)
      .resolvesOnce(indexPage(["j1", "j2", "j3", "j4"], { k: 1 }))
      .resolves(indexPage(["j5", "j6", "j7", "j8", "j9"]));
    jobsWithStatuses({
      j1: "active",
      j2: "completed",
      j3: "paused",
      j4: "active",
      j5: "cancelled",
      j6: "active",
      j7: "active",
      j8: "paused",
      j9: "active",
    });
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    const query = db.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(query).toMatchObject({
      IndexName: TENANT_INDEX.name,
      KeyConditionExpression: "jobTenant = :tenant",
    });
    expect(query?.FilterExpression).toBeUndefined(); // the index holds no status to filter on
    expect(db.commandCalls(QueryCommand)).toHaveLength(2); // every page counted
    expect(db.commandCalls(BatchGetCommand)).toHaveLength(2); // each page's jobs read once
    // The recount is claimed before anything is read, then the difference added.
    const claim = updates().findIndex((u) => u.UpdateExpression?.includes("recountedAt"));
    expect(updates()[claim]).toMatchObject({
      UpdateExpression: "SET recountedAt = :now",
      ConditionExpression: "attribute_not_exists(recountedAt) OR recountedAt <= :before",
      ExpressionAttributeValues: { ":now": NOW, ":before": NOW - RECOUNT_EVERY_MS },
    });
    expect(updates().find((u) => u.UpdateExpression?.includes(":delta"))).toMatchObject({
      UpdateExpression: "ADD activeJobs :delta",
      ExpressionAttributeValues: { ":delta": 7 - 10 },
    });
    expectValidExpressions();
  });

  it("refuses without reading the jobs when another process claimed the recount first", async () => {
    // Every count full, and the claim taken.
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "COUNTS" } }).rejects(conditionFailed());
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "TYPES" } }).resolves({});
    db.on(GetCommand).resolves({ Item: { second: SECOND - 5, creates: 1, activeJobs: 10 } });
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toMatchObject({
      admitted: false,
      quota: "active-jobs",
    });
    expect(db.commandCalls(QueryCommand)).toHaveLength(0);
    expect(db.commandCalls(BatchGetCommand)).toHaveLength(0);
  });

  it("does not recount more than once in RECOUNT_EVERY_MS: a full count refuses for a minute", async () => {
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "COUNTS" } }).rejects(conditionFailed());
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "TYPES" } }).resolves({});
    db.on(GetCommand).resolves({
      Item: { second: SECOND - 5, creates: 1, activeJobs: 10, recountedAt: NOW - RECOUNT_EVERY_MS + 1 },
    });
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "x", at(NOW))).toMatchObject({
      admitted: false,
      quota: "active-jobs",
      retryAfterSeconds: 60,
    });
    expect(db.commandCalls(QueryCommand)).toHaveLength(0);
  });

  it("refuses a type past the tenant's types, and adds a known one without a count of its own", async () => {
    db.on(UpdateCommand, { Key: { pk: "QUOTA#a", sk: "TYPES" } }).rejects(conditionFailed());
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);
    expect(await quotas.admitCreate("a", "new", at(NOW))).toMatchObject({
      admitted: false,
      quota: "job-types",
      limit: 3,
    });
    expect(updates()[0]?.ConditionExpression).toBe(
      "attribute_not_exists(#types) OR contains(#types, :name) OR size(#types) < :max",
    );
    expect(updates()).toHaveLength(1); // no count taken for a refused type
  });

  it("sends nothing when every quota is lifted; keeps every placeholder used with one lifted", async () => {
    const none = new DynamoTenantQuotas(client, "t", {
      tenantCreatesPerSecond: 0,
      tenantMaxActiveJobs: 0,
      tenantMaxJobTypes: 0,
      runRetentionDays: 90,
    });
    expect(await none.admitCreate("a", "x", at(NOW))).toEqual({ admitted: true });
    await none.releaseCreate("a");
    expect(db.calls()).toHaveLength(0);

    db.on(UpdateCommand).resolves({});
    for (const lifted of [
      { ...limits, tenantCreatesPerSecond: 0 },
      { ...limits, tenantMaxActiveJobs: 0 },
    ]) {
      const quotas = new DynamoTenantQuotas(client, "t", lifted, () => NOW);
      await quotas.admitCreate("a", "x", at(NOW));
      await quotas.admitCreate("a", "x", at(NOW));
      await quotas.releaseCreate("a");
    }
    expectValidExpressions();
  });
});

describe("DynamoTenantQuotas.releaseType", () => {
  it("gives a type back when no page of the tenant's jobs has an active or paused one of it", async () => {
    db.on(QueryCommand)
      .resolvesOnce(indexPage(["j1"], { pk: "JOB#j1" }))
      .resolvesOnce(indexPage(["j2"]));
    jobsWithStatuses({ j1: "completed", j2: "cancelled" });
    db.on(UpdateCommand).resolves({});
    const quotas = new DynamoTenantQuotas(client, "t", limits, () => NOW);

    expect(await quotas.releaseType("a", "x")).toBe(true);

    const queries = db.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(queries).toHaveLength(2);
    expect(queries[0]).toMatchObject({
      IndexName: TENANT_INDEX.name,
      FilterExpression: "#type = :type",
      ExpressionAttributeValues: { ":tenant": "a", ":type": "x" },
    });
    expect(queries[1]?.ExclusiveStartKey).toEqual({ pk: "JOB#j1" });
    expect(updates()).toEqual([
      expect.objectContaining({
        Key: { pk: "QUOTA#a", sk: "TYPES" },
        UpdateExpression: "DELETE #types :type",
        ExpressionAttributeValues: { ":type": new Set(["x"]) },
      }),
    ]);
    expectValidExpressions();
  });

  it("keeps a type an active or paused job still has, and does nothing when the quota is lifted", async () => {
    db.on(QueryCommand).resolves(indexPage(["j1", "j2"], { pk: "JOB#j2" }));
    jobsWithStatuses({ j1: "completed", j2: "paused" });
    expect(await new DynamoTenantQuotas(client, "t", limits, () => NOW).releaseType("a", "x")).toBe(false);
    expect(db.commandCalls(QueryCommand)).toHaveLength(1);
    expect(updates()).toEqual([]);

    db.reset();
    const lifted = new DynamoTenantQuotas(client, "t", { ...limits, tenantMaxJobTypes: 0 });
    expect(await lifted.releaseType("a", "x")).toBe(false);
    expect(db.calls()).toHaveLength(0);
  });

  it("reads a tenant's types again after KNOWN_TYPES_MS, so a type given back elsewhere is counted again", async () => {
    db.on(UpdateCommand).resolves({ Attributes: { types: new Set(["x"]) } });
    let now = NOW;
    const quotas = new DynamoTenantQuotas(
      client,
      "t",
      { ...limits, tenantCreatesPerSecond: 0, tenantMaxActiveJobs: 0 },
      () => now,
    );
    await quotas.admitCreate("a", "x", at(now));
    await quotas.admitCreate("a", "x", at(now));
    expect(updates()).toHaveLength(1); // known: not written again
    now += KNOWN_TYPES_MS;
    await quotas.admitCreate("a", "x", at(now));
    expect(updates()).toHaveLength(2);
  });
});
