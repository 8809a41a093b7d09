/**
 * DynamoDB's rules for a document (a map or list attribute, such as a job's payload), checked
 * before anything is written: the local emulator enforces none of them, and DynamoDB answers a
 * broken one with a ValidationException, a 500 to our caller (docs: "Supported data types and
 * naming rules", "Item sizes and formats", "Constraints in Amazon DynamoDB").
 *
 * - Nesting: at most 32 levels, the attribute itself being level 1 and a scalar inside the
 *   deepest container counting as a level (31 maps nested in one another are accepted, 32
 *   refused): at most 31 levels of maps and lists.
 * - Numbers: up to 38 significant digits, magnitudes from 1E-130 to below 1E+126. The AWS SDK
 *   also refuses to send a JavaScript number beyond +-(2^53 - 1) (it could not be read back
 *   exactly), so that is the range we take; larger ones go as strings.
 * - Strings and map keys: valid UTF-8 (a lone UTF-16 surrogate has no UTF-8 form); map keys at
 *   least one character and under 64 KB.
 * - Size: by DynamoDB's own rules (documentSize), which can be well over the JSON's length.
 */

/** Maps and lists nested in one attribute, counting the attribute itself. */
export const MAX_DOCUMENT_DEPTH = 31;
/** The smallest magnitude DynamoDB stores, short of zero. */
export const MIN_NUMBER_MAGNITUDE = 1e-130;
/** Attribute names (map keys included) must be shorter than 64 KB of UTF-8. */
export const MAX_NAME_BYTES = 65_535;

export interface DocumentProblem {
  /** Where, as path segments from the document's root. */
  readonly path: readonly (string | number)[];
  readonly message: string;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string has a UTF-8 form (no lone UTF-16 surrogate). */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/**
 * The first way `value` (parsed JSON) breaks DynamoDB's document rules when stored as an
 * attribute at `depth` (1: a top-level attribute), or undefined. Stops at the first problem, and
 * never descends further than the limit, so a hostile depth costs nothing.
 */
export function documentProblem(value: unknown, depth = 1): DocumentProblem | undefined {
  const problem = (path: (string | number)[], message: string) => ({ path, message });
  // An explicit stack, not recursion: a body may nest far deeper than the call stack allows.
  const stack: Array<{ value: unknown; path: (string | number)[]; depth: number }> = [
    { value, path: [], depth },
  ];
  while (stack.length > 0) {
    const item = stack.pop() as (typeof stack)[number];
    const { value: v, path } = item;
    if (typeof v === "string") {
      if (!isWellFormed(v)) return problem(path, "not valid Unicode (a lone surrogate has no UTF-8 form)");
    } else if (typeof v === "number") {
      if (!Number.isFinite(v)) return problem(path, "numbers must be finite");
      if (Math.abs(v) > Number.MAX_SAFE_INTEGER) {
        return problem(path, "numbers must be within +-9007199254740991 (send larger ones as strings)");
      }
      if (v !== 0 && Math.abs(v) < MIN_NUMBER_MAGNITUDE) {
        return problem(path, "numbers other than 0 must be at least 1e-130 in magnitude");
      }
    } else if (v !== null && typeof v === "object") {
      if (item.depth > MAX_DOCUMENT_DEPTH) {
        return problem(path, `nested more than ${MAX_DOCUMENT_DEPTH} levels deep`);
      }
      const entries: Array<[string | number, unknown]> = Array.isArray(v)
        ? v.map((element, index) => [index, element])
        : Object.entries(v);
      for (const [key, element] of entries) {
        if (typeof key === "string") {
          if (key === "") return problem(path, "an empty key is not allowed");
          if (!isWellFormed(key)) {
            return problem([...path, key], "key is not valid Unicode (a lone surrogate has no UTF-8 form)");
          }
          if (utf8Length(key) > MAX_NAME_BYTES) {
            return problem(path, `a key is longer than ${MAX_NAME_BYTES} bytes`);
          }
        }
        stack.push({ value: element, path: [...path, key], depth: item.depth + 1 });
      }
    } else if (v !== null && typeof v !== "boolean") {
      return problem(path, "not a JSON value");
    }
  }
  return undefined;
}

/**
 * A string's length in UTF-8 bytes, as Buffer.byteLength counts it (a lone surrogate counts 3,
 * its replacement character's), without Node's Buffer: the contract also runs in browsers.
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** A number's stored size: its significant digits, two to a byte, plus one (at most 21). */
export function numberSize(text: string): number {
  const digits = text
    .replace(/^[-+]/, "")
    .replace(/[eE].*$/, "")
    .replace(".", "")
    .replace(/^0+/, "")
    .replace(/0+$/, "");
  return Math.min(21, Math.ceil(Math.max(1, digits.length) / 2) + 1);
}

/**
 * The bytes DynamoDB counts for a JSON value stored as an attribute value: strings by their
 * UTF-8 length, numbers by their digits, true/false/null one byte, and a list or map 3 bytes plus
 * 1 for each element and each key's UTF-8 name. Iterative, like documentProblem.
 */
export function documentSize(value: unknown): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") size += utf8Length(v);
    else if (typeof v === "number") size += numberSize(String(v));
    else if (Array.isArray(v)) {
      size += 3 + v.length;
      for (const element of v) stack.push(element);
    } else if (v !== null && typeof v === "object") {
      for (const [key, element] of Object.entries(v)) {
        size += 1 + utf8Length(key);
        stack.push(element);
      }
      size += 3;
    } else size += 1;
  }
  return size;
}
