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
 * The local runtime's on-disk dynalite after a SIGKILL between an item's index writes and the
 * item itself: an index that lost entries is whole again after rebuildIndexes.
 */
const require = createRequire(import.meta.url);
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
});
