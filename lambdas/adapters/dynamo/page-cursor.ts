import type { NativeAttributeValue } from "@aws-sdk/lib-dynamodb";

/** DynamoDB's LastEvaluatedKey as an opaque, URL-safe cursor, and back. */
export type StartKey = Record<string, NativeAttributeValue>;

export function encodeCursor(key: StartKey | undefined): string | undefined {
  return key ? Buffer.from(JSON.stringify(key), "utf8").toString("base64url") : undefined;
}

export function decodeCursor(cursor: string | undefined): StartKey | undefined {
  if (cursor === undefined) return undefined;
  const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("bad cursor");
  return value as StartKey;
}
