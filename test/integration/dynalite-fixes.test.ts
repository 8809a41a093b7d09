import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { ensureTable } from "../../local/bootstrap";
import { startDynamo } from "../../local/emulators";
import { rebuildIndexes } from "../../local/rebuild-indexes";

/**
 * The local runtime's two repairs to dynalite: its indexes rebuilt after an unclean stop (a
 * SIGKILL between an item's index writes and the item itself), and the LevelDB iterator of
 * every query closed.
 */
const require = createRequire(import.meta.url);
const abstractLevel = createRequire(require.resolve("dynalite"))("abstract-level") as {
  AbstractValueIterator: { prototype: object };
};
const dynaliteDb = require("dynalite/db/index.js") as {
  create(options: { path: string }): {
    db: { close(): Promise<void> };
    deleteIndexDb(type: string, table: string, index: string, done: (error?: Error) => void): void;
  };
};

describe("rebuildIndexes", () => {
  const path = mkdtempSync(join(tmpdir(), "jobsched-rebuild-"));
  afterAll(() => rmSync(path, { recursive: true, force: true }));

  async function withTable<T>(work: (db: DynamoDBDocumentClient) => Promise<T>): Promise<T> {
    const dynamo = await startDynamo({ path });
    const client = new DynamoDBClient({
      endpoint: dynamo.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    try {
      await ensureTable(client, "rebuild");
      return await work(DynamoDBDocumentClient.from(client));
    } finally {
      client.destroy();
      await dynamo.close();
    }
  }
  const deadLetters = (db: DynamoDBDocumentClient) =>
    db.send(
      new QueryCommand({
        TableName: "rebuild",
        IndexName: "dead-letter-index",
        KeyConditionExpression: "deadTenant = :t",
        ExpressionAttributeValues: { ":t": "tenant-a" },
      }),
    );

  it("writes every index entry again from the items, after entries were lost", {
    timeout: 30_000,
  }, async () => {
    // Prepare: three items in the sparse dead-letter index, then that index wiped on disk.
    await withTable(async (db) => {
      for (const n of [1, 2, 3]) {
        await db.send(
          new PutCommand({
            TableName: "rebuild",
            Item: { pk: `JOB#j${n}`, sk: "RUN#1", deadTenant: "tenant-a", finishedAt: n },
          }),
        );
      }
      expect((await deadLetters(db)).Count).toBe(3);
    });
    const store = dynaliteDb.create({ path });
    await new Promise<void>((done, fail) =>
      store.deleteIndexDb("Global", "rebuild", "dead-letter-index", (e) => (e ? fail(e) : done())),
    );
    await store.db.close();
    await withTable(async (db) => expect((await deadLetters(db)).Count).toBe(0));

    // Act
    const rebuilt = await rebuildIndexes(path);

    // Assess
    expect(rebuilt).toEqual({ tables: 1, items: 3 });
    await withTable(async (db) => {
      const found = await deadLetters(db);
      expect(found.Items?.map((i) => i.pk).sort()).toEqual(["JOB#j1", "JOB#j2", "JOB#j3"]);
    });
  });

  it("closes the LevelDB iterator of every query it answers", { timeout: 30_000 }, async () => {
    // Count iterators opened (first next) and closed, on the class dynalite's iterators share.
    const common = Object.getPrototypeOf(abstractLevel.AbstractValueIterator.prototype) as {
      next: (...args: unknown[]) => unknown;
      close: (...args: unknown[]) => unknown;
    };
    const { next, close } = common;
    const seen = new WeakSet<object>();
    let opened = 0;
    let closed = 0;
    common.next = function (this: object, ...args: unknown[]) {
      if (!seen.has(this)) {
        seen.add(this);
        opened += 1;
      }
      return next.apply(this, args);
    };
    common.close = function (this: object, ...args: unknown[]) {
      closed += 1;
      return close.apply(this, args);
    };
    try {
      await withTable(async (db) => {
        for (let n = 0; n < 20; n++) await deadLetters(db);
        // The stream closes its iterator once the answer is sent.
        await new Promise((done) => setTimeout(done, 100));
      });
    } finally {
      common.next = next;
      common.close = close;
    }
    expect(opened).toBeGreaterThanOrEqual(20);
    expect(closed).toBe(opened);
  });
});
