import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { ensureTable } from "../../local/bootstrap";
import { startDynamo } from "../../local/emulators";
import { indexFormatIsCurrent, rebuildIndexes } from "../../local/rebuild-indexes";

/**
 * The local runtime's three repairs to dynalite: its indexes rebuilt after an unclean stop (a
 * SIGKILL between an item's index writes and the item itself), the LevelDB iterator of every
 * query closed, and index entries that no longer collide (patches/dynalite+4.0.0.patch).
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

/** dynalite started on `path` (in memory without one), jobsched's table in it, then stopped. */
async function withEmulatorTable<T>(
  options: { path?: string },
  table: string,
  work: (db: DynamoDBDocumentClient) => Promise<T>,
): Promise<T> {
  const dynamo = await startDynamo(options);
  const client = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    await ensureTable(client, table);
    return await work(DynamoDBDocumentClient.from(client));
  } finally {
    client.destroy();
    await dynamo.close();
  }
}

describe("rebuildIndexes", () => {
  const path = mkdtempSync(join(tmpdir(), "jobsched-rebuild-"));
  afterAll(() => rmSync(path, { recursive: true, force: true }));

  const withTable = <T>(work: (db: DynamoDBDocumentClient) => Promise<T>) =>
    withEmulatorTable({ path }, "rebuild", work);
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

  it("rebuilds the indexes of a folder written before the index-key patch, once", {
    timeout: 30_000,
  }, async () => {
    // Prepare: the dead-letter index wiped, and the folder's format marker gone, as in a
    // folder from before the patch (whose entries sit under keys nothing deletes).
    await withTable(async (db) => expect((await deadLetters(db)).Count).toBe(3));
    const store = dynaliteDb.create({ path });
    await new Promise<void>((done, fail) =>
      store.deleteIndexDb("Global", "rebuild", "dead-letter-index", (e) => (e ? fail(e) : done())),
    );
    await store.db.close();
    rmSync(join(path, "index-format"));
    expect(indexFormatIsCurrent(path)).toBe(false);

    // Act: an ordinary start, not after an unclean stop.
    await withTable(async (db) => expect((await deadLetters(db)).Count).toBe(3));

    // Assess: marked, so the next start does not rebuild again.
    expect(indexFormatIsCurrent(path)).toBe(true);
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

/**
 * dynalite files an index entry under the index key plus the first six hex characters of an MD5
 * of the table key (its `hashPrefix`, recomputed here). Unpatched, two items with the same index
 * key whose table keys share those six characters got one entry: the second overwrote the
 * first. The repair-backlog test lost a run that way about one run in five (10,000 runs with
 * one check time), and jobs due at the same instant could vanish from the due index.
 */
function dynaliteHashOf(pk: string, sk: string): string {
  return createHash("md5").update("Outliers").update(pk).update(sk).digest("hex").slice(0, 6);
}

function twoKeysWithOneHash(sk: string): [string, string] {
  const seen = new Map<string, string>();
  for (let n = 0; ; n++) {
    const pk = `JOB#j_collide${n}`;
    const hash = dynaliteHashOf(pk, sk);
    const earlier = seen.get(hash);
    if (earlier) return [earlier, pk];
    seen.set(hash, pk);
  }
}

describe("dynalite's index entries", () => {
  it("keeps both entries of two items with one index key whose table keys share dynalite's hash", {
    timeout: 30_000,
  }, async () => {
    await withEmulatorTable({}, "collide", async (db) => {
      const pks = twoKeysWithOneHash("JOB");
      expect(dynaliteHashOf(pks[0], "JOB")).toBe(dynaliteHashOf(pks[1], "JOB"));
      for (const pk of pks) {
        await db.send(
          new PutCommand({ TableName: "collide", Item: { pk, sk: "JOB", dueKey: "D#00", dueAt: 1000 } }),
        );
      }
      const due = (cursor?: Record<string, unknown>) =>
        db.send(
          new QueryCommand({
            TableName: "collide",
            IndexName: "due-index",
            KeyConditionExpression: "dueKey = :k AND dueAt <= :t",
            ExpressionAttributeValues: { ":k": "D#00", ":t": 1000 },
            Limit: 1,
            ExclusiveStartKey: cursor,
          }),
        );

      // Page by page, as the sweep reads it: each item once.
      const first = await due();
      const second = await due(first.LastEvaluatedKey);
      const third = await due(second.LastEvaluatedKey);
      const found = [...(first.Items ?? []), ...(second.Items ?? []), ...(third.Items ?? [])];
      expect(found.map((item) => item.pk).sort()).toEqual([...pks].sort());

      // Moving one item out of the index leaves the other's entry where it was.
      await db.send(
        new PutCommand({
          TableName: "collide",
          Item: { pk: pks[0], sk: "JOB", dueKey: "D#00", dueAt: 5000 },
        }),
      );
      const left = await due();
      expect(left.Items?.map((item) => item.pk)).toEqual([pks[1]]);
    });
  });
});
