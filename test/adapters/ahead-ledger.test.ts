import { marshall } from "@aws-sdk/util-dynamodb";
import { describe, expect, it } from "vitest";
import {
  AHEAD_LEDGER_KEY,
  countRewindExpression,
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
    // The largest write: every group, each read with an end, a rewind and a count to match.
    const moves = groups.map((group) => ({
      group,
      read: { through: T + 9_999_999_999, rewoundTo: T + 9_999_999_998, rewinds: 999_999 },
      through: T + 9_999_999_999_999,
    }));
    const input = moveExpression(moves);
    expect(placeholderProblems(input)).toEqual([]);
    for (const text of [input.UpdateExpression, input.ConditionExpression])
      expect(Buffer.byteLength(text, "utf8")).toBeLessThanOrEqual(MAX_EXPRESSION_BYTES);
    // DynamoDB allows at most 300 operators in an expression: comparators, functions, AND.
    const operators = (text: string) =>
      (text.match(/ AND | = | <= | > |attribute_not_exists\(/g) ?? []).length;
    expect(operators(input.ConditionExpression)).toBeLessThanOrEqual(300);
    expect(placeholderProblems(rewindExpression(31, T))).toEqual([]);
    expect(placeholderProblems(countRewindExpression(31, T))).toEqual([]);
    // Back only, counted, and an end set where the group had none.
    expect(rewindExpression(31, T)).toMatchObject({
      UpdateExpression: "SET #r = :from, #t = if_not_exists(#t, :from) ADD #n :one",
      ConditionExpression: "attribute_not_exists(#r) OR #r > :from",
      ExpressionAttributeNames: { "#r": "r31", "#t": "t31", "#n": "n31" },
    });
    // Refused (already as far back): counted all the same, while the rewind is still there.
    expect(countRewindExpression(31, T)).toEqual({
      UpdateExpression: "ADD #n :one",
      ConditionExpression: "#r <= :from",
      ExpressionAttributeNames: { "#n": "n31", "#r": "r31" },
      ExpressionAttributeValues: { ":one": 1, ":from": T },
    });
  });

  it("holds every group's end, rewind and count in one write unit (under 1 KB)", () => {
    const item: Record<string, unknown> = { ...AHEAD_LEDGER_KEY };
    for (const group of groups) {
      const suffix = String(group).padStart(2, "0");
      // Epoch milliseconds far ahead: 13-14 significant digits each.
      item[`t${suffix}`] = 99_999_999_999_999;
      item[`r${suffix}`] = 99_999_999_999_998;
      // A count no ledger reaches (a rewind a second for 30 years).
      item[`n${suffix}`] = 999_999_999;
    }
    expect(itemSize(marshall(item))).toBeLessThan(1024);
    const ledger = ledgerOfItem(item);
    expect(ledger.size).toBe(SWEEP_GROUP_COUNT);
    expect(ledger.get(7)).toEqual({
      through: 99_999_999_999_999,
      rewoundTo: 99_999_999_999_998,
      rewinds: 999_999_999,
    });
  });

  it("reads a missing item as an empty ledger, and ignores what is not an entry", () => {
    expect(ledgerOfItem(undefined).size).toBe(0);
    const ledger = ledgerOfItem({ ...AHEAD_LEDGER_KEY, t03: T, r03: "bad", t4: T, x05: T });
    expect([...ledger.entries()]).toEqual([[3, { through: T, rewoundTo: undefined, rewinds: undefined }]]);
  });

  it("conditions a move on each entry as read: absent, an end, an end and a rewind, and the count of rewinds", () => {
    const input = moveExpression([
      { group: 0, read: undefined, through: T },
      { group: 1, read: { through: T - 1 }, through: T },
      { group: 2, read: { through: T - 1, rewoundTo: T - 5, rewinds: 3 }, through: T },
      { group: 3, read: { through: T - 1, rewinds: 4 }, through: T },
    ]);
    expect(input.ConditionExpression).toBe(
      "attribute_not_exists(#t0) AND attribute_not_exists(#r0) AND attribute_not_exists(#n0) AND " +
        "#t1 = :o1 AND attribute_not_exists(#r1) AND attribute_not_exists(#n1) AND " +
        "#t2 = :o2 AND #r2 = :w2 AND #n2 = :n2 AND " +
        "#t3 = :o3 AND attribute_not_exists(#r3) AND #n3 = :n3",
    );
    // The count is not written: it only grows, by the rewinds.
    expect(input.UpdateExpression).toBe(
      "SET #t0 = :t0, #t1 = :t1, #t2 = :t2, #t3 = :t3 REMOVE #r0, #r1, #r2, #r3",
    );
    expect(input.ExpressionAttributeNames).toMatchObject({ "#t2": "t02", "#r2": "r02", "#n2": "n02" });
    expect(input.ExpressionAttributeValues).toMatchObject({ ":n2": 3, ":n3": 4 });
  });
});
