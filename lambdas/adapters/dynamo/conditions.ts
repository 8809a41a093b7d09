import { type DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";

/**
 * DynamoDB answers a failed condition with ConditionalCheckFailedException. Matching on the
 * name (not the class) works for the real service, dynalite and mocked clients alike.
 */
export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}

/** Runs a conditional write; true if it was applied, false if its condition did not hold. */
export async function applied(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Puts an item unless one with its key exists: the building block of every create. */
export async function putIfAbsent(
  db: DynamoDBDocumentClient,
  tableName: string,
  item: Record<string, unknown>,
): Promise<"created" | "exists"> {
  const created = await applied(() =>
    db.send(
      new PutCommand({ TableName: tableName, Item: item, ConditionExpression: "attribute_not_exists(pk)" }),
    ),
  );
  return created ? "created" : "exists";
}
