import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { DynamoJobStore } from "../../lambdas/adapters/dynamo/dynamo-job-store";
import { createTestStack, type TestStack } from "../support/stack";

/**
 * The ahead ledger's rewind on DynamoDB is two conditional writes (decision 0059): the rewind
 * moved back, or, already as far back, only counted. A tick's write can land between the two;
 * the memory store (one atomic step) cannot show that window, so it is driven here on dynalite,
 * with the tick's write made between the sweep's two writes.
 */
describe("the ahead ledger's rewind against a tick's write landing between its two writes (dynalite)", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack("ledger-race");
  });

  /** The store, with `between` run before the n-th ledger UpdateCommand it sends. */
  function storeWith(nth: number, between: () => Promise<unknown>) {
    let updates = 0;
    const db = new Proxy(stack.db, {
      get(target, property, receiver) {
        if (property !== "send") return Reflect.get(target, property, receiver);
        return async (command: Parameters<DynamoDBDocumentClient["send"]>[0]) => {
          if (command instanceof UpdateCommand && command.input.Key?.pk === "SWEEP#AHEAD") {
            updates += 1;
            if (updates === nth) await between();
          }
          return target.send(command as UpdateCommand);
        };
      },
    });
    return new DynamoJobStore(db, stack.config.tableName);
  }

  it("keeps the sweep's firing when the tick's write removes the earlier rewind between them", async () => {
    const plain = new DynamoJobStore(stack.db, stack.config.tableName);
    const group = 4;
    const R = 1_000;
    const U = 5_000;
    expect(await plain.moveAheadLedger([{ group, read: undefined, through: 500 }])).toBe(true);
    await plain.rewindAheadLedger(group, R); // an earlier sweep failed at R
    const tickRead = (await plain.getAheadLedger()).get(group);
    expect(tickRead).toEqual({ through: 500, rewoundTo: R, rewinds: 1 });
    // The tick hands out [R, 90,000]; its own sweep fails at U. The sweep's rewind is refused
    // (R is earlier), and the tick's write lands before the sweep's count.
    let tickMoved: boolean | undefined;
    const racing = storeWith(2, async () => {
      tickMoved = await plain.moveAheadLedger([{ group, read: tickRead, through: 90_000 }]);
    });
    await racing.rewindAheadLedger(group, U);
    expect(tickMoved).toBe(true);
    // The count was refused (the rewind had gone): the rewind was written again, at U.
    const after = (await plain.getAheadLedger()).get(group);
    expect(after?.through).toBe(90_000);
    expect(after?.rewoundTo).toBe(U);
  });

  it("keeps the sweep's firing when, between its two writes, a tick removes the rewind and another sweep rewinds to a later one", async () => {
    const plain = new DynamoJobStore(stack.db, stack.config.tableName);
    const group = 6;
    const R = 1_000;
    const U = 5_000;
    const V = 7_000;
    expect(await plain.moveAheadLedger([{ group, read: undefined, through: 500 }])).toBe(true);
    await plain.rewindAheadLedger(group, R);
    const tickRead = (await plain.getAheadLedger()).get(group);
    // The sweep's rewind to U is refused (R is earlier). Before its count: the tick's write
    // removes R, and another sweep (of a later slice) rewinds the group to V, after U. A count
    // that only asked for a rewind to be there would take V for it, and U would be lost.
    const racing = storeWith(2, async () => {
      expect(await plain.moveAheadLedger([{ group, read: tickRead, through: 90_000 }])).toBe(true);
      await plain.rewindAheadLedger(group, V);
    });
    await racing.rewindAheadLedger(group, U);
    const after = (await plain.getAheadLedger()).get(group);
    expect(after?.rewoundTo).toBe(U);
  });

  it("gives up after three rounds, throwing: SQS then hands the sweep's whole slice out again", async () => {
    const plain = new DynamoJobStore(stack.db, stack.config.tableName);
    const group = 5;
    expect(await plain.moveAheadLedger([{ group, read: undefined, through: 500 }])).toBe(true);
    await plain.rewindAheadLedger(group, 1_000);
    // Before every count, a tick records the group again (its rewind removed), and before every
    // rewind another sweep rewinds it earlier: neither of this sweep's writes ever takes.
    let through = 600;
    let earlier = 900;
    let updates = 0;
    const db = new Proxy(stack.db, {
      get(target, property, receiver) {
        if (property !== "send") return Reflect.get(target, property, receiver);
        return async (command: UpdateCommand) => {
          if (command instanceof UpdateCommand && command.input.Key?.pk === "SWEEP#AHEAD") {
            updates += 1;
            if (updates % 2 === 1) {
              await plain.rewindAheadLedger(group, earlier);
              earlier -= 1;
            } else {
              const read = (await plain.getAheadLedger()).get(group);
              await plain.moveAheadLedger([{ group, read, through: through++ }]);
            }
          }
          return target.send(command);
        };
      },
    });
    const store = new DynamoJobStore(db, stack.config.tableName);
    await expect(store.rewindAheadLedger(group, 5_000)).rejects.toThrow(/3 rewinds in a row/);
    expect(updates).toBe(6);
  });
});
