import fc from "fast-check";
import { attributeSize } from "./dynamo-rules";

/**
 * Payloads at the edges the API promises (packages/contract/src/requests.ts, createJobRequest.payload):
 * nested exactly as deep as it takes, exactly as large, numbers at the ends of its range. Built
 * and measured here, by this file's own rules, not the code's.
 */

/** Maps and lists nested in a value, the value itself counting (a scalar: 0). */
export function containerDepth(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((deepest, child) => Math.max(deepest, containerDepth(child)), 0);
}

/** Compact JSON's UTF-8 bytes, as a client sends it. */
export const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8");

/** The next double below a positive one. */
export function nextDown(value: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  view.setBigUint64(0, view.getBigUint64(0) - 1n);
  return view.getFloat64(0);
}

/** Numbers the API takes: 0, or of magnitude 1E-130 to 2^53 - 1 (JSON numbers are doubles). */
export const validNumber = fc.oneof(
  fc.maxSafeInteger(),
  fc.double({ min: 1e-130, max: Number.MAX_SAFE_INTEGER, noNaN: true }),
  fc.double({ min: -Number.MAX_SAFE_INTEGER, max: -1e-130, noNaN: true }),
);
/** Keys: any well-formed text, at least one character. */
const key = fc.string({ unit: "grapheme", minLength: 1, maxLength: 6 });
/**
 * Scalars. No zero: the code sizes a zero as 2 bytes (one digit, as for 1), this file as 1 (no
 * significant digit; DynamoDB's docs do not say), so exact-size payloads leave it out.
 */
export const scalar = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 12 }),
  validNumber.filter((n) => n !== 0),
  fc.boolean(),
  fc.constant(null),
);
/** A small map or list of scalars: depth 1. */
const shallow = fc.oneof(fc.array(scalar, { maxLength: 3 }), fc.dictionary(key, scalar, { maxKeys: 3 }));

/**
 * A payload whose maps and lists nest exactly `depth` deep, the payload itself counting, in a
 * random shape: each level a map or a list, with siblings beside the deepest branch, and at the
 * bottom a scalar or an empty map or list.
 */
export function payloadAtDepth(depth: number): fc.Arbitrary<unknown> {
  return fc
    .record({
      levels: fc.array(
        fc.record({
          asList: fc.boolean(),
          key,
          siblings: fc.array(fc.oneof(scalar, shallow), { maxLength: 2 }),
          position: fc.nat(),
        }),
        { minLength: depth, maxLength: depth },
      ),
      leaf: fc.oneof({ weight: 3, arbitrary: scalar }, fc.constantFrom<unknown>({}, [])),
    })
    .map(({ levels, leaf }) => {
      // An empty map or list at the bottom is a level itself.
      const empty = typeof leaf === "object" && leaf !== null;
      let value = leaf;
      for (const [i, level] of levels
        .slice(empty ? 1 : 0)
        .reverse()
        .entries()) {
        // The container at this level may hold values nesting `room` deep beside `value`.
        const room = depth - (levels.length - (empty ? 1 : 0) - i);
        const siblings = level.siblings.map((s) => (containerDepth(s) <= room ? s : 1));
        if (level.asList) {
          const at = level.position % (siblings.length + 1);
          value = [...siblings.slice(0, at), value, ...siblings.slice(at)];
        } else {
          // The deepest branch last: a sibling under the same key cannot replace it.
          value = Object.fromEntries([...siblings.map((s, j) => [`${j}`, s]), [level.key, value]]);
        }
      }
      return value;
    });
}

/**
 * `base` with a string `fill` and a list `ones` grown so that its DynamoDB size less its JSON
 * bytes is `gap`, and the larger of the two is exactly `target`: gap 0, both are. Each escaped
 * quote in `fill` adds 2 bytes of JSON and 1 of DynamoDB; each 1 in `ones` 2 of JSON and 3 of
 * DynamoDB; `filler` characters (then x for the bytes left) as many of each.
 */
export function filledTo(
  base: Record<string, unknown>,
  target: number,
  gap: number,
  filler = "x",
): Record<string, unknown> {
  const build = (escapes: number, ones: number, bytes: number) => {
    const each = Buffer.byteLength(filler, "utf8");
    const fill = `${'"'.repeat(escapes)}${filler.repeat(Math.floor(bytes / each))}${"x".repeat(bytes % each)}`;
    return { ...base, fill, ones: Array.from({ length: ones }, () => 1) };
  };
  const first = build(0, 1, 0);
  const delta = gap - (attributeSize(first) - jsonBytes(first));
  const balanced = build(Math.max(0, -delta), 1 + Math.max(0, delta), 0);
  const room = target - Math.max(attributeSize(balanced), jsonBytes(balanced));
  if (room < 0) throw new Error(`the base is already ${-room} bytes over ${target}`);
  return build(Math.max(0, -delta), 1 + Math.max(0, delta), room);
}
