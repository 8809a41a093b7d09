import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { convertToAttr, marshall } from "@aws-sdk/util-dynamodb";
import { JOBS_TABLE } from "../../lambdas/definitions/table";
import { placeholderProblems } from "./expression-rules";
import { applyUpdate, type UpdateInput } from "./update-expression";

/**
 * DynamoDB's rules for the items a write leaves, implemented here on marshalled items apart
 * from the code under test (docs: "Supported data types and naming rules", "Item sizes and
 * formats"): the tests decide with these, not with packages/contract/src/document-limits.ts, whether a
 * write DynamoDB would take.
 */

/** DynamoDB's largest item: 400 KB, names and values. */
export const MAX_ITEM_BYTES = 400 * 1024;
/** Levels of nesting: a top-level attribute is level 1, a value inside it level 2, ... */
export const MAX_NESTING_LEVELS = 32;

export const isUtf8 = (text: string) => Buffer.from(text, "utf8").toString("utf8") === text;
const utf8 = (text: string) => Buffer.byteLength(text, "utf8");

/** Significant digits and exponent of a number's text, or undefined when it is not a number. */
function decimal(text: string): { digits: string; exponent: number } | undefined {
  const match = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return undefined;
  // value = digits x 10^exponent, digits without leading or trailing zeros
  let digits = `${match[1]}${match[2] ?? ""}`.replace(/^0+/, "");
  let exponent = Number(match[3] ?? 0) - (match[2] ?? "").length;
  while (digits.endsWith("0")) {
    digits = digits.slice(0, -1);
    exponent += 1;
  }
  return { digits, exponent };
}

/** Why DynamoDB refuses a number (its N text), or undefined. */
export function numberProblem(text: string): string | undefined {
  const number = decimal(text);
  if (!number) return `N ${text} is not a number`;
  const { digits, exponent } = number;
  if (digits === "") return undefined; // zero
  if (digits.length > 38) return `N ${text} has more than 38 significant digits`;
  const order = exponent + digits.length - 1; // the power of ten of the leading digit
  if (order > 125) return `N ${text} is 1E+126 or more`;
  if (order < -130) return `N ${text} is under 1E-130`;
  return undefined;
}

/** Problems of one attribute value at `level` (a top-level attribute is level 1). */
export function valueProblems(value: AttributeValue, level: number): string[] {
  if (level > MAX_NESTING_LEVELS) return [`nested more than ${MAX_NESTING_LEVELS} levels`];
  if (value.S !== undefined) return isUtf8(value.S) ? [] : ["S is not valid UTF-8"];
  const numbers = value.N !== undefined ? [value.N] : value.NS;
  if (numbers !== undefined) return numbers.flatMap((n) => numberProblem(n) ?? []);
  if (value.SS !== undefined)
    return value.SS.every(isUtf8) ? [] : ["SS has a string that is not valid UTF-8"];
  if (value.L !== undefined) return value.L.flatMap((v) => valueProblems(v, level + 1));
  if (value.M !== undefined) {
    return Object.entries(value.M).flatMap(([name, v]) => [
      ...(name === "" ? ["empty attribute name"] : []),
      ...(isUtf8(name) ? [] : ["attribute name is not valid UTF-8"]),
      ...(utf8(name) >= 65_536 ? ["attribute name of 64 KB or more"] : []),
      ...valueProblems(v, level + 1),
    ]);
  }
  return [];
}

/** A number's size: 1 byte per two significant digits, plus 1. */
const numberSize = (text: string) => Math.ceil((decimal(text)?.digits.length ?? 0) / 2) + 1;

/** DynamoDB's size of a value: lists and maps 3 bytes plus 1 per element (and its name). */
export function sizeOf(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + sizeOf(v), 0);
  if (value.M !== undefined) {
    return 3 + Object.entries(value.M).reduce((s, [n, v]) => s + 1 + utf8(n) + sizeOf(v), 0);
  }
  return 1; // BOOL, NULL
}

const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/** The DynamoDB size of a plain value stored as an attribute (not counting its name). */
export function attributeSize(value: unknown): number {
  return sizeOf(convertToAttr(value, MARSHALL));
}

/** An item's size: each attribute's name and value. */
export function itemSize(item: Record<string, unknown>): number {
  return Object.entries(marshall(item, MARSHALL)).reduce((s, [n, v]) => s + utf8(n) + sizeOf(v), 0);
}

export function itemProblems(item: Record<string, unknown>): string[] {
  let marshalled: Record<string, AttributeValue>;
  try {
    marshalled = marshall(item, MARSHALL);
  } catch (error) {
    return [`the SDK cannot marshal it: ${String(error)}`];
  }
  const problems = Object.entries(marshalled).flatMap(([name, value]) => [
    ...(name === "" ? ["empty attribute name"] : []),
    ...valueProblems(value, 1),
  ]);
  const size = Object.entries(marshalled).reduce((s, [n, v]) => s + utf8(n) + sizeOf(v), 0);
  if (size > MAX_ITEM_BYTES) problems.push(`item of ${size} bytes, over 400 KB`);
  return problems;
}

/** The item stored under a key, as the test's DynamoDB mock holds it (undefined: none). */
export type StoredAt = (key: Record<string, unknown>) => Record<string, unknown> | undefined;

const KEY_NAMES = [JOBS_TABLE.partitionKey.name, JOBS_TABLE.sortKey.name];

/** The item an UpdateItem leaves over what is stored, and what DynamoDB would refuse in it. */
export function updatedItem(
  input: Record<string, unknown>,
  storedAt: StoredAt,
): { item: Record<string, unknown>; problems: string[] } {
  const update = input as unknown as UpdateInput;
  const { item, problems } = applyUpdate(storedAt(update.Key), update, KEY_NAMES);
  return { item, problems: [...problems, ...itemProblems(item)] };
}

/**
 * What DynamoDB would refuse in one recorded write: the item a put writes, the item an update
 * leaves when applied to the item `storedAt` holds under its key, and every expression value.
 */
export function writeProblems(call: string, input: Record<string, unknown>, storedAt: StoredAt): string[] {
  return [...new Set(problemsOfWrite(call, input, storedAt))];
}

function problemsOfWrite(call: string, input: Record<string, unknown>, storedAt: StoredAt): string[] {
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const fromValues = [
    ...(Object.keys(values).length > 0 ? itemProblems(values) : []),
    ...placeholderProblems(input),
  ];
  if (call === "PutItem") return [...itemProblems(input.Item as Record<string, unknown>), ...fromValues];
  if (call === "UpdateItem") return [...updatedItem(input, storedAt).problems, ...fromValues];
  if (call === "DeleteItem" || call === "ConditionCheck") return fromValues;
  if (call === "TransactWriteItems") {
    const calls: Record<string, string> = { Put: "PutItem", Update: "UpdateItem", Delete: "DeleteItem" };
    return (input.TransactItems as Array<Record<string, Record<string, unknown>>>).flatMap((entry) =>
      Object.entries(entry).flatMap(([kind, action]) =>
        problemsOfWrite(calls[kind] ?? "ConditionCheck", action, storedAt),
      ),
    );
  }
  if (call === "BatchWriteItem") {
    const requests = Object.values(
      input.RequestItems as Record<string, Array<Record<string, { Item?: object }>>>,
    );
    return requests
      .flat()
      .flatMap((r) => (r.PutRequest?.Item ? itemProblems(r.PutRequest.Item as Record<string, unknown>) : []));
  }
  return []; // SQS: the bodies are our own JSON
}
