import { randomBytes } from "node:crypto";
import {
  type AttributeValue,
  BatchGetItemCommand,
  BatchWriteItemCommand,
  CreateTableCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactGetItemsCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createDynamoClient } from "../../lambdas/adapters/clients";
import { type ItemImages, meterCapacity } from "../../lambdas/adapters/dynamo/capacity-meter";
import { createTableInput } from "../../local/bootstrap";
import { cannedDynamoClient, type Respond, serviceError } from "../support/canned-dynamo";

import { METERED_TABLE } from "../support/metered-table";

/**
 * The capacity meter against DynamoDB's documented rules. Every expected figure is worked by hand
 * in a comment: sizes by "DynamoDB item sizes and formats", writes by "DynamoDB read and write
 * operations" and "Global secondary indexes: provisioned throughput considerations", reads by
 * "Read consistency", transactions by "Managing capacity for transactions". What dynalite can do
 * runs against it; transactions, throttling and unprocessed batch items against canned answers.
 */
type Item = Record<string, AttributeValue>;

const TABLE = METERED_TABLE;

/*
 * Jobs, sized as name bytes + value bytes:
 *   pk "JOB#?" 2 + 5 = 7, sk "JOB" 2 + 3 = 5, status "active" 6 + 6 = 12, plan "pro" 4 + 3 = 7,
 *   note 1,500 x "x": 4 + 1,500 = 1,504                                 -> unfiled: 1,535 bytes
 *   dueKey "d#1" 6 + 3 = 9, dueAt 100 (1 significant digit: 1 byte + 1) 5 + 2 = 7,
 *   tenant "acme" 6 + 4 = 10, createdAt 7: 9 + 2 = 11                  -> filed: 1,572 bytes
 * Either is 2 write units on the table (1 KB < size <= 2 KB). A filed job's index entries (the
 * table's keys, the index's keys and what it projects):
 *   by-due:    pk 7 + sk 5 + dueKey 9 + dueAt 7 + status 12 = 40 bytes -> 1 unit
 *   by-tenant: pk 7 + sk 5 + tenant 10 + createdAt 11 + plan 7 = 40 bytes -> 1 unit
 */
const key = (id: string): Item => ({ pk: { S: `JOB#${id}` }, sk: { S: "JOB" } });
const unfiled = (id: string): Item => ({
  ...key(id),
  status: { S: "active" },
  plan: { S: "pro" },
  note: { S: "x".repeat(1_500) },
});
const filed = (id: string): Item => ({
  ...unfiled(id),
  dueKey: { S: "d#1" },
  dueAt: { N: "100" },
  tenant: { S: "acme" },
  createdAt: { N: "7" },
});
/** pk "QRY#1" 2 + 5 = 7, sk "?" 2 + 1 = 3, data 4 + (bytes - 14): an item of exactly `bytes`. */
const sized = (sk: string, bytes: number): Item => ({
  pk: { S: "QRY#1" },
  sk: { S: sk },
  data: { S: "x".repeat(bytes - 14) },
});
const KB = 1024;

describe("against the emulator", () => {
  const config = { region: "us-east-1", dynamodbEndpoint: inject("dynamoEndpoint") };
  const TableName = `meter-${randomBytes(4).toString("hex")}`;
  // Unmetered: seeds the items and reads the images.
  const plain = createDynamoClient(config);
  const images: ItemImages = {
    table: TABLE,
    read: async (Key) =>
      (await plain.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }))).Item,
  };
  const metered = (withImages = true) => {
    const client = createDynamoClient(config);
    return { client, meter: meterCapacity(client, withImages ? images : undefined) };
  };
  const seed = (...items: Item[]) =>
    Promise.all(items.map((Item) => plain.send(new PutItemCommand({ TableName, Item }))));

  beforeAll(async () => {
    await plain.send(new CreateTableCommand(createTableInput(TableName, TABLE)));
    // Three 1.5 KB items (1,536 bytes) in one partition, for the reads.
    await seed(sized("1", 1.5 * KB), sized("2", 1.5 * KB), sized("3", 1.5 * KB));
  });

  describe("writes, with item images (as bench-cost counts them)", () => {
    it("charges a put of a new job the table and one write per index entry", async () => {
      const { client, meter } = metered();

      await client.send(new PutItemCommand({ TableName, Item: filed("a") }));

      expect(meter.writes()).toBe(2 + 1 + 1); // the table 2, by-due 1, by-tenant 1
      expect(meter.indexWrites()).toBe(2);
    });

    it("charges an update that moves an index key a delete and a put of the entry", async () => {
      await seed(filed("b"));
      const { client, meter } = metered();

      await client.send(
        new UpdateItemCommand({
          TableName,
          Key: key("b"),
          UpdateExpression: "SET dueAt = :at",
          ExpressionAttributeValues: { ":at": { N: "160" } },
        }),
      );

      // 160 has 2 significant digits: 1 byte + 1, as 100, so the job stays 1,572 bytes: 2 units.
      // by-due: its key moved, delete 1 + put 1; by-tenant keeps nothing that changed: 0.
      expect(meter.writes()).toBe(2 + 2);
      expect(meter.indexWrites()).toBe(2);
    });

    it("charges an update of a projected attribute one write to the index that keeps it", async () => {
      await seed(filed("c"));
      const { client, meter } = metered();

      await client.send(
        new UpdateItemCommand({
          TableName,
          Key: key("c"),
          UpdateExpression: "SET #status = :status",
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: { ":status": { S: "paused" } },
        }),
      );

      // "paused" is 6 bytes as "active": the table 2; by-due keeps status: 1; by-tenant: 0.
      expect(meter.writes()).toBe(2 + 1);
      expect(meter.indexWrites()).toBe(1);
    });

    it("charges a write refused by its condition the existing item's size, no index", async () => {
      await seed(filed("d"));
      const { client, meter } = metered();

      const put = client.send(
        new PutItemCommand({ TableName, Item: filed("d"), ConditionExpression: "attribute_not_exists(pk)" }),
      );

      await expect(put).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
      expect(meter.writes()).toBe(2); // the existing 1,572 bytes: 2 units
      expect(meter.indexWrites()).toBe(0);
    });

    it("charges a condition failing where no item exists one unit", async () => {
      const { client, meter } = metered();

      const update = client.send(
        new UpdateItemCommand({
          TableName,
          Key: key("e"),
          UpdateExpression: "SET #plan = :plan", // PLAN is a reserved word
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: { "#plan": "plan" },
          ExpressionAttributeValues: { ":plan": { S: "pro" } },
        }),
      );

      await expect(update).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
      expect(meter.writes()).toBe(1);
    });

    it("charges nothing for a write DynamoDB refuses before reading the item", async () => {
      const { client, meter } = metered();

      // Each awaited before the next is sent: two in flight can reject out of order, unhandled.
      await expect(
        client.send(new UpdateItemCommand({ TableName, Key: key("f"), UpdateExpression: "SET" })),
      ).rejects.toMatchObject({ name: "ValidationException" });
      await expect(
        client.send(
          new PutItemCommand({ TableName, Item: { ...key("f"), note: { S: "x".repeat(401 * KB) } } }),
        ),
      ).rejects.toMatchObject({ name: "ValidationException" });
      expect(meter.writes()).toBe(0);
      expect(meter.calls()).toEqual({ UpdateItemCommand: 1, PutItemCommand: 1 });
    });

    it("charges a BatchWriteItem request by request, index entries included", async () => {
      await seed(filed("h"));
      const { client, meter } = metered();

      await client.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [TableName]: [
              { PutRequest: { Item: filed("g") } },
              { PutRequest: { Item: unfiled("i") } },
              { DeleteRequest: { Key: key("h") } },
            ],
          },
        }),
      );

      // g: the table 2 + by-due 1 + by-tenant 1 = 4; i: 1,535 bytes, 2, in no index;
      // h deleted: its 1,572 bytes, 2, and both entries removed, 1 + 1 = 4.
      expect(meter.writes()).toBe(4 + 2 + 4);
      expect(meter.indexWrites()).toBe(2 + 2);
    });
  });

  describe("through a document client (as the adapters send)", () => {
    it("meters its marshalled commands as the plain client's", async () => {
      await seed(filed("k"));
      const { client, meter } = metered();
      const documents = DynamoDBDocumentClient.from(client);

      await documents.send(
        new BatchWriteCommand({
          RequestItems: { [TableName]: [{ PutRequest: { Item: unmarshall(filed("l")) } }] },
        }),
      );
      await documents.send(new GetCommand({ TableName, Key: unmarshall(key("k")), ConsistentRead: true }));

      // The put: the table 2, by-due 1, by-tenant 1; the get: 1,572 bytes -> 4 KB, 1 unit.
      expect(meter.writes()).toBe(2 + 1 + 1);
      expect(meter.indexWrites()).toBe(2);
      expect(meter.reads()).toBe(1);
    });
  });

  describe("writes, without item images (as bench-sweep counts them)", () => {
    it("counts the emulator's table units, a failed condition's minimum and a refused write's nothing", async () => {
      const { client, meter } = metered(false);

      await client.send(new PutItemCommand({ TableName, Item: filed("j") }));
      // One after the other: a second request in flight whose rejection lands while the first is
      // awaited is an unhandled rejection, which fails the run (it did once in CI).
      await expect(
        client.send(
          new PutItemCommand({
            TableName,
            Item: filed("j"),
            ConditionExpression: "attribute_not_exists(pk)",
          }),
        ),
      ).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
      await expect(
        client.send(new UpdateItemCommand({ TableName, Key: key("j"), UpdateExpression: "SET" })),
      ).rejects.toMatchObject({ name: "ValidationException" });
      // The put: the table's 2 units as dynalite reports them (no index); the failed condition:
      // 1, the least it can cost (the item's size is unknown without images); refused: 0.
      expect(meter.writes()).toBe(2 + 1 + 0);
      expect(meter.indexWrites()).toBe(0);
    });
  });

  describe("reads", () => {
    const query = (extra: Partial<ConstructorParameters<typeof QueryCommand>[0]> = {}) =>
      new QueryCommand({
        TableName,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: "QRY#1" } },
        ...extra,
      });

    it("charges a Query the sum of the items it read, rounded once: three 1.5 KB items, 1 unit", async () => {
      const { client, meter } = metered();

      const { Count } = await client.send(query());

      // 3 x 1.5 KB = 4.5 KB, rounded up to 8 KB: 2 x 0.5 = 1 (rounded per item: 3 x 0.5 = 1.5).
      expect(Count).toBe(3);
      expect(meter.reads()).toBe(1);
    });

    it("charges a strongly consistent Query a full unit per 4 KB", async () => {
      const { client, meter } = metered();

      await client.send(query({ ConsistentRead: true }));

      expect(meter.reads()).toBe(2); // 4.5 KB -> 8 KB: 2 x 1
    });

    it("charges the items a filter evaluated, even when it returns none", async () => {
      const { client, meter } = metered();

      const { Count } = await client.send(
        query({
          FilterExpression: "#data = :none",
          ExpressionAttributeNames: { "#data": "data" },
          ExpressionAttributeValues: { ":pk": { S: "QRY#1" }, ":none": { S: "none" } },
        }),
      );

      expect(Count).toBe(0);
      expect(meter.reads()).toBe(1); // the three items evaluated, 4.5 KB: 1, as unfiltered
    });

    it("charges a Query that finds nothing one 4 KB read: 0.5, strongly consistent 1", async () => {
      const { client, meter } = metered();
      const nothing = { ExpressionAttributeValues: { ":pk": { S: "QRY#0" } } };

      await client.send(query(nothing));
      await client.send(query({ ...nothing, ConsistentRead: true }));
      await client.send(
        new QueryCommand({
          TableName,
          IndexName: "by-due",
          KeyConditionExpression: "dueKey = :none",
          ExpressionAttributeValues: { ":none": { S: "d#none" } },
        }),
      );

      // 0.5 + 1 + 0.5 on the index (an index query is eventually consistent).
      expect(meter.reads()).toBe(0.5 + 1 + 0.5);
      expect(meter.emptyQueries()).toBe(3);
    });

    it("charges a BatchGetItem each item as its own GetItem: three 1.5 KB items, 3 x 0.5", async () => {
      const { client, meter } = metered();

      await client.send(
        new BatchGetItemCommand({
          RequestItems: {
            [TableName]: { Keys: ["1", "2", "3"].map((sk) => ({ pk: { S: "QRY#1" }, sk: { S: sk } })) },
          },
        }),
      );

      // Each 1.5 KB rounds up to 4 KB on its own: 0.5 each, 1.5 (summed first it would be 1).
      expect(meter.reads()).toBe(1.5);
    });

    it("charges a GetItem of an absent item: 0.5, strongly consistent 1", async () => {
      const { client, meter } = metered();
      const Key = { pk: { S: "QRY#1" }, sk: { S: "9" } };

      await client.send(new GetItemCommand({ TableName, Key }));
      await client.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }));

      expect(meter.reads()).toBe(0.5 + 1);
    });
  });
});

describe("against canned answers (what the emulator cannot do)", () => {
  const lock: Item = { pk: { S: "LCK#1" }, sk: { S: "LOCK" } }; // 2 + 5 + 2 + 4 = 13 bytes

  /** A client answering with `respond`, metered with images of `stored` (items by pk). */
  function canned(stored: Map<string, Item>, respond: Respond) {
    const client = cannedDynamoClient(respond);
    const images: ItemImages = { table: TABLE, read: async (k) => stored.get(k.pk?.S ?? "") };
    return { client, meter: meterCapacity(client, images) };
  }

  it("charges a TransactWriteItems' table twice per item, prepare and commit; the indexes once", async () => {
    const stored = new Map([["LCK#1", lock]]);
    const { client, meter } = canned(stored, () => {
      stored.set("JOB#t", filed("t")); // the transaction commits
      return { body: {} };
    });

    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: "t", Item: filed("t") } },
          { ConditionCheck: { TableName: "t", Key: lock, ConditionExpression: "attribute_exists(pk)" } },
        ],
      }),
    );

    // The put: 2 units x 2 = 4 on the table, by-due 1, by-tenant 1;
    // the check: 13 bytes, 1 unit x 2 = 2.
    expect(meter.writes()).toBe(4 + 1 + 1 + 2);
    expect(meter.indexWrites()).toBe(2);
  });

  it("charges a cancelled transaction each item's prepare: one write of its size, no index", async () => {
    const stored = new Map([["LCK#1", lock]]);
    const { client, meter } = canned(stored, () =>
      serviceError("TransactionCanceledException", {
        CancellationReasons: [{ Code: "None" }, { Code: "ConditionalCheckFailed" }],
      }),
    );

    const cancelled = client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: "t", Item: filed("u") } },
          { ConditionCheck: { TableName: "t", Key: lock, ConditionExpression: "attribute_not_exists(pk)" } },
        ],
      }),
    );

    await expect(cancelled).rejects.toMatchObject({ name: "TransactionCanceledException" });
    expect(meter.writes()).toBe(1 + 1); // u absent: 1; the lock, 13 bytes: 1
    expect(meter.indexWrites()).toBe(0);
  });

  it("does not charge a BatchWriteItem's unprocessed items", async () => {
    const stored = new Map<string, Item>();
    const { client, meter } = canned(stored, () => {
      stored.set("JOB#v", filed("v"));
      return { body: { UnprocessedItems: { t: [{ PutRequest: { Item: filed("w") } }] } } };
    });

    await client.send(
      new BatchWriteItemCommand({
        RequestItems: { t: [{ PutRequest: { Item: filed("v") } }, { PutRequest: { Item: filed("w") } }] },
      }),
    );

    expect(meter.writes()).toBe(2 + 1 + 1); // v alone: the table 2, by-due 1, by-tenant 1
    expect(meter.indexWrites()).toBe(2);
  });

  it("charges nothing for a throttled write or a transaction refused as a whole", async () => {
    const { client, meter } = canned(new Map(), (operation) =>
      serviceError(
        operation === "PutItem" ? "ProvisionedThroughputExceededException" : "ValidationException",
      ),
    );

    await expect(client.send(new PutItemCommand({ TableName: "t", Item: filed("x") }))).rejects.toMatchObject(
      { name: "ProvisionedThroughputExceededException" },
    );
    await expect(
      client.send(
        new TransactWriteItemsCommand({ TransactItems: [{ Put: { TableName: "t", Item: filed("y") } }] }),
      ),
    ).rejects.toMatchObject({ name: "ValidationException" });
    expect(meter.writes()).toBe(0);
    expect(meter.calls()).toEqual({ PutItemCommand: 1, TransactWriteItemsCommand: 1 });
  });

  it("charges a TransactGetItems two units per 4 KB of each item, an absent one too", async () => {
    const { client, meter } = canned(new Map(), () => ({
      body: { Responses: [{ Item: sized("1", 1.5 * KB) }, { Item: sized("2", 6.5 * KB) }, {}] },
    }));

    await client.send(
      new TransactGetItemsCommand({
        TransactItems: ["1", "2", "3"].map((sk) => ({
          Get: { TableName: "t", Key: { pk: { S: "QRY#1" }, sk: { S: sk } } },
        })),
      }),
    );

    // 1.5 KB -> 4 KB: 1 x 2 = 2; 6.5 KB -> 8 KB: 2 x 2 = 4; absent: the minimum, 1 x 2 = 2.
    expect(meter.reads()).toBe(2 + 4 + 2);
  });
});
