import type { NativeAttributeValue } from "@aws-sdk/lib-dynamodb";
import { isWellFormed } from "@jobsched/contract";
import { ValidationError } from "../../core/errors";
import { type IndexDefinition, JOBS_TABLE } from "../../definitions/table";

/**
 * DynamoDB's LastEvaluatedKey as an opaque, URL-safe cursor, and back. A cursor comes back
 * from the caller, so it is checked before it reaches DynamoDB: it must decode, and `belongs`
 * must accept it (for example: it is a key of the caller's own listing), and it must be a whole
 * key of the listing's table or index, as DynamoDB takes one. Anything else is a 400.
 */
export type StartKey = Record<string, NativeAttributeValue>;

export function encodeCursor(key: StartKey | undefined): string | undefined {
  return key ? Buffer.from(JSON.stringify(key), "utf8").toString("base64url") : undefined;
}

/** The attributes (and their types) a start key of the table, or of one of its indexes, has. */
export type KeyShape = Readonly<Record<string, "S" | "N">>;

export function keyShapeOf(index?: IndexDefinition): KeyShape {
  const keys = [
    JOBS_TABLE.partitionKey,
    JOBS_TABLE.sortKey,
    ...(index ? [index.partitionKey, index.sortKey] : []),
  ];
  return Object.fromEntries(keys.map((key) => [key.name, key.type]));
}

/** DynamoDB's key limits: a partition key's value at most 2048 bytes, a sort key's 1024. */
const MAX_KEY_VALUE_BYTES = 1024;

/** Whether `value` is a whole key of that shape, each value one DynamoDB would take as a key. */
function isWholeKey(value: unknown, shape: KeyShape): value is StartKey {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const entries = Object.entries(value);
  if (entries.length !== Object.keys(shape).length) return false;
  return entries.every(([name, v]) => {
    if (shape[name] === "S") {
      return (
        typeof v === "string" &&
        v !== "" &&
        isWellFormed(v) &&
        Buffer.byteLength(v, "utf8") <= MAX_KEY_VALUE_BYTES
      );
    }
    return shape[name] === "N" && Number.isSafeInteger(v);
  });
}

export function decodeCursor(
  cursor: string | undefined,
  shape: KeyShape,
  belongs: (key: StartKey) => boolean = () => true,
): StartKey | undefined {
  if (cursor === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  // A cursor we gave out is a whole key of this listing: every attribute, nothing else.
  if (!isWholeKey(value, shape) || !belongs(value)) {
    throw new ValidationError("cursor: not a cursor this listing gave out", "cursor");
  }
  return value;
}
