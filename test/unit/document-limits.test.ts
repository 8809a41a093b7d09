import {
  documentProblem,
  documentSize,
  isWellFormed,
  MAX_DOCUMENT_DEPTH,
  MAX_NAME_BYTES,
  numberSize,
  utf8Length,
} from "@jobsched/contract";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { durationMs } from "../../lambdas/core/duration";

/** DynamoDB's document rules as the edge checks them (decision 0015), value by value. */
const nest = (depth: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { k: value } : [value];
  return value;
};

describe("documentProblem", () => {
  it("accepts ordinary JSON of every kind", () => {
    for (const value of [
      null,
      true,
      false,
      0,
      -0,
      1.5,
      -42,
      "",
      "text ✓ 😀",
      [],
      {},
      { a: [1, { b: null }] },
    ]) {
      expect(documentProblem(value)).toBeUndefined();
    }
  });

  it("allows 31 levels of maps and lists in an attribute, not 32, and counts the level it starts at", () => {
    expect(documentProblem(nest(MAX_DOCUMENT_DEPTH))).toBeUndefined();
    expect(documentProblem(nest(MAX_DOCUMENT_DEPTH + 1))).toMatchObject({
      message: "nested more than 31 levels deep",
    });
    // A body is level 0: its payload field is then the attribute, level 1.
    expect(documentProblem({ payload: nest(MAX_DOCUMENT_DEPTH) }, 0)).toBeUndefined();
    expect(documentProblem({ payload: nest(MAX_DOCUMENT_DEPTH + 1) }, 0)?.path[0]).toBe("payload");
    // 100,000 levels cost nothing: the walk stops at the limit, without recursion.
    expect(documentProblem(nest(100_000))).toBeDefined();
  });

  it("refuses numbers the SDK cannot carry exactly or DynamoDB cannot store, naming where", () => {
    expect(documentProblem({ a: [1, 2 ** 53] })).toMatchObject({ path: ["a", 1] });
    for (const n of [2 ** 53, -(2 ** 53), 1e300, Number.MAX_VALUE]) {
      expect(documentProblem(n)?.message).toMatch(/within \+-9007199254740991/);
    }
    for (const n of [1e-131, 5e-324, -1e-200]) expect(documentProblem(n)?.message).toMatch(/1e-130/);
    for (const n of [Number.NaN, Number.POSITIVE_INFINITY])
      expect(documentProblem(n)?.message).toMatch(/finite/);
    for (const n of [2 ** 53 - 1, -(2 ** 53 - 1), 1e-130, 0.1]) expect(documentProblem(n)).toBeUndefined();
  });

  it("refuses lone surrogates in values and keys, empty keys and keys of 64 KB", () => {
    expect(documentProblem({ a: "x\ud800" })).toMatchObject({
      path: ["a"],
      message: expect.stringMatching(/surrogate/),
    });
    expect(documentProblem({ "\udc00": 1 })).toMatchObject({ path: ["\udc00"] });
    expect(documentProblem({ a: { "": 1 } })).toMatchObject({
      path: ["a"],
      message: "an empty key is not allowed",
    });
    expect(documentProblem({ ["k".repeat(MAX_NAME_BYTES + 1)]: 1 })?.message).toMatch(
      /longer than 65535 bytes/,
    );
    expect(documentProblem({ ["k".repeat(MAX_NAME_BYTES)]: 1 })).toBeUndefined();
    expect(documentProblem("\ud83d\ude00")).toBeUndefined(); // a pair is fine
  });

  it("refuses what is not JSON", () => {
    expect(documentProblem(undefined)?.message).toBe("not a JSON value");
    expect(documentProblem({ f: () => 1 })?.path).toEqual(["f"]);
  });
});

describe("isWellFormed", () => {
  it("agrees with a round trip through UTF-8", () => {
    const samples = ["", "a", "é", "😀", "\ud800", "a\udfff", "\udbff\udfff", "\udfff\udbff", "x\ud83d"];
    for (const text of samples) {
      expect(isWellFormed(text), JSON.stringify(text)).toBe(
        Buffer.from(text, "utf8").toString("utf8") === text,
      );
    }
  });
});

describe("documentSize and numberSize", () => {
  it("count as DynamoDB does: UTF-8 strings, numbers by digits, 3 bytes a container plus 1 an element", () => {
    expect(documentSize("héllo")).toBe(6);
    expect(documentSize(null)).toBe(1);
    expect(documentSize(true)).toBe(1);
    expect(documentSize([])).toBe(3);
    expect(documentSize([1, 2])).toBe(3 + 2 * (1 + 2));
    expect(documentSize({ ab: "c" })).toBe(3 + 1 + 2 + 1);
    // 100,000 small numbers: 200 KB of JSON, 300 KB as DynamoDB counts it.
    expect(documentSize(Array.from({ length: 100_000 }, () => 1))).toBe(3 + 100_000 * 3);
  });

  it("sizes a number by its significant digits, two to a byte, plus one, at most 21", () => {
    expect(numberSize("0")).toBe(2);
    expect(numberSize("7")).toBe(2);
    expect(numberSize("12")).toBe(2);
    expect(numberSize("123")).toBe(3);
    expect(numberSize("-1000")).toBe(2); // trailing zeros are not significant
    expect(numberSize("0.00012")).toBe(2);
    expect(numberSize("1.5e+20")).toBe(2);
    expect(numberSize("1".repeat(60))).toBe(21);
  });
});

describe("durations", () => {
  it("are at most 366 days however they are written", () => {
    expect(durationMs("P366D", "f")).toBe(366 * 86_400_000);
    expect(() => durationMs("P367D", "f")).toThrow(/at most 366 days/);
    expect(() => durationMs("P1000000000D", "maxLateness")).toThrow(/maxLateness: must be at most 366 days/);
  });
});

describe("utf8Length (the contract's byte count, which runs in browsers too)", () => {
  it("counts as Buffer.byteLength does, lone surrogates included", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }),
        fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) }),
        (text, surrogates) => {
          for (const sample of [text, surrogates, `${surrogates}${text}${surrogates}`])
            expect(utf8Length(sample)).toBe(Buffer.byteLength(sample, "utf8"));
        },
      ),
    );
    for (const sample of ["", "a", "é", "€", "😀", "\uD800", "\uDC00x", "a\uD83D"])
      expect(utf8Length(sample)).toBe(Buffer.byteLength(sample, "utf8"));
  });
});
