import type { NativeAttributeValue } from "@aws-sdk/lib-dynamodb";
import { ValidationError } from "../../core/errors";

/**
 * DynamoDB's LastEvaluatedKey as an opaque, URL-safe cursor, and back. A cursor comes back
 * from the caller, so it is checked before it reaches DynamoDB: it must decode, and `belongs`
 * must accept it (for example: it is a key of the caller's own listing). Anything else is a 400.
 */
export type StartKey = Record<string, NativeAttributeValue>;

export function encodeCursor(key: StartKey | undefined): string | undefined {
  return key ? Buffer.from(JSON.stringify(key), "utf8").toString("base64url") : undefined;
}

export function decodeCursor(
  cursor: string | undefined,
  belongs: (key: StartKey) => boolean = () => true,
): StartKey | undefined {
  if (cursor === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  const isKey =
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === "string" || typeof v === "number");
  if (!isKey || !belongs(value as StartKey)) {
    throw new ValidationError("cursor: not a cursor this listing gave out", "cursor");
  }
  return value as StartKey;
}
