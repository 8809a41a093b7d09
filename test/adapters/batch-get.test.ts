import { BatchGetCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { batchGetItems } from "../../lambdas/adapters/dynamo/batch-get";

/** batchGetItems: 100 keys a request, unprocessed keys asked for again (decision 0041). */
const db = mockClient(DynamoDBDocumentClient);
const client = db as unknown as DynamoDBDocumentClient;
const key = (i: number) => ({ pk: `JOB#${i}`, sk: "JOB" });

beforeEach(() => db.reset());

describe("batchGetItems", () => {
  it("asks 100 keys a request, in the consistency asked for", async () => {
    db.on(BatchGetCommand).callsFake((input: { RequestItems: Record<string, { Keys: unknown[] }> }) => ({
      Responses: { t: input.RequestItems.t?.Keys ?? [] },
    }));
    const items = await batchGetItems(
      client,
      "t",
      Array.from({ length: 250 }, (_, i) => key(i)),
      true,
    );
    expect(items).toHaveLength(250);
    const sizes = db.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems?.t?.Keys?.length);
    expect(sizes).toEqual([100, 100, 50]);
    expect(db.commandCalls(BatchGetCommand)[0]?.args[0].input.RequestItems?.t?.ConsistentRead).toBe(true);
  });

  it("asks again for the keys DynamoDB left unprocessed, and only those", async () => {
    db.on(BatchGetCommand)
      .resolvesOnce({ Responses: { t: [key(0)] }, UnprocessedKeys: { t: { Keys: [key(1), key(2)] } } })
      .resolvesOnce({ Responses: { t: [key(1)] }, UnprocessedKeys: { t: { Keys: [key(2)] } } })
      .resolvesOnce({ Responses: { t: [key(2)] } });
    const items = await batchGetItems(client, "t", [key(0), key(1), key(2)], false);
    expect(items).toEqual([key(0), key(1), key(2)]);
    const asked = db.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems?.t?.Keys);
    expect(asked).toEqual([[key(0), key(1), key(2)], [key(1), key(2)], [key(2)]]);
  });

  it("goes on while answers bring items (a reply past its size), and gives up after 9 empty answers in a row", async () => {
    // Two keys an answer, as for items too large for one reply: 10 keys in 5 answers.
    db.on(BatchGetCommand).callsFake((input: { RequestItems: Record<string, { Keys: unknown[] }> }) => {
      const keys = input.RequestItems.t?.Keys ?? [];
      return {
        Responses: { t: keys.slice(0, 2) },
        UnprocessedKeys: keys.length > 2 ? { t: { Keys: keys.slice(2) } } : {},
      };
    });
    expect(
      await batchGetItems(
        client,
        "t",
        Array.from({ length: 10 }, (_, i) => key(i)),
        true,
      ),
    ).toHaveLength(10);
    db.reset();
    db.on(BatchGetCommand).resolves({ Responses: { t: [] }, UnprocessedKeys: { t: { Keys: [key(0)] } } });
    await expect(batchGetItems(client, "t", [key(0)], true)).rejects.toThrow(/1 keys unprocessed/);
    expect(db.commandCalls(BatchGetCommand)).toHaveLength(9);
  }, 30_000);
});
