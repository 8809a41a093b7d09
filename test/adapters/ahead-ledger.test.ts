import { marshall } from "@aws-sdk/util-dynamodb";
import { describe, expect, it } from "vitest";
import {
  AHEAD_LEDGER_KEY,
  ledgerOfItem,
  moveExpression,
  rewindExpression,
} from "../../lambdas/adapters/dynamo/ahead-ledger";
import { itemSize } from "../../lambdas/adapters/dynamo/item-size";
import { SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import { MAX_EXPRESSION_BYTES, placeholderProblems } from "../support/expression-rules";

const T = Date.UTC(2026, 11, 6, 2, 0, 0);
const groups = Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g);

describe("the ahead ledger's item and expressions (decision 0059), by DynamoDB's rules", () => {
  it("a tick of every group writes expressions within DynamoDB's 4 KB, each name and value used", () => {
    // The largest write: every group, each read with an end and a rewind to match.
    const moves = groups.map((group) => ({
      group,
      read: { through: T + 9_999_999_999, rewoundTo: T + 9_999_999_998 },
      through: T + 9_999_999_999_999,
    }));
    const input = moveExpression(moves);
    expect(placeholderProblems(input)).toEqual([]);
    for (const text of [input.UpdateExpression, input.ConditionExpression])
      expect(Buffer.byteLength(text, "utf8")).toBeLessThanOrEqual(MAX_EXPRESSION_BYTES);
    expect(placeholderProblems(rewindExpression(31, T))).toEqual([]);
    // Back only, and an end set where the group had none.
    expect(rewindExpression(31, T)).toMatchObject({
      UpdateExpression: "SET #r = :from, #t = if_not_exists(#t, :from)",
      ConditionExpression: "attribute_not_exists(#r) OR #r > :from",
      ExpressionAttributeNames: { "#r": "r31", "#t": "t31" },
    });
  });

  it("holds every group's end and rewind in one write unit (under 1 KB)", () => {
    const item: Record<string, unknown> = { ...AHEAD_LEDGER_KEY };
    for (const group of groups) {
      const suffix = String(group).padStart(2, "0");
      // Epoch milliseconds far ahead: 13-14 significant digits each.
      item[`t${suffix}`] = 99_999_999_999_999;
      item[`r${suffix}`] = 99_999_999_999_998;
    }
    expect(itemSize(marshall(item))).toBeLessThan(1024);
    const ledger = ledgerOfItem(item);
    expect(ledger.size).toBe(SWEEP_GROUP_COUNT);
    expect(ledger.get(7)).toEqual({ through: 99_999_999_999_999, rewoundTo: 99_999_999_999_998 });
  });

  it("reads a missing item as an empty ledger, and ignores what is not an entry", () => {
    expect(ledgerOfItem(undefined).size).toBe(0);
    const ledger = ledgerOfItem({ ...AHEAD_LEDGER_KEY, t03: T, r03: "bad", t4: T, x05: T });
    expect([...ledger.entries()]).toEqual([[3, { through: T, rewoundTo: undefined }]]);
  });

  it("conditions a move on each entry as read: absent, an end, an end and a rewind", () => {
    const input = moveExpression([
      { group: 0, read: undefined, through: T },
      { group: 1, read: { through: T - 1 }, through: T },
      { group: 2, read: { through: T - 1, rewoundTo: T - 5 }, through: T },
    ]);
    expect(input.ConditionExpression).toBe(
      "attribute_not_exists(#t0) AND attribute_not_exists(#r0) AND #t1 = :o1 AND attribute_not_exists(#r1) AND #t2 = :o2 AND #r2 = :w2",
    );
    expect(input.UpdateExpression).toBe("SET #t0 = :t0, #t1 = :t1, #t2 = :t2 REMOVE #r0, #r1, #r2");
    expect(input.ExpressionAttributeNames).toMatchObject({ "#t2": "t02", "#r2": "r02" });
  });
});
