/** DynamoDB's limit on any one expression string (ConditionExpression, UpdateExpression). */
export const MAX_EXPRESSION_BYTES = 4_096;

/**
 * DynamoDB refuses an expression that uses a #name or :value it was not given, and a request
 * that gives one its expressions do not use ("unused in expressions").
 */
export function placeholderProblems(input: Record<string, unknown>): string[] {
  const expressions = [
    "UpdateExpression",
    "ConditionExpression",
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
  ]
    .map((key) => input[key])
    .filter((text): text is string => typeof text === "string")
    .join(" ");
  const used = new Set(expressions.match(/[#:][A-Za-z0-9_]+/g) ?? []);
  const given = [
    ...Object.keys((input.ExpressionAttributeNames ?? {}) as object),
    ...Object.keys((input.ExpressionAttributeValues ?? {}) as object),
  ];
  return [
    ...given.filter((p) => !used.has(p)).map((p) => `${p} given but unused in the expressions`),
    ...[...used].filter((p) => !given.includes(p)).map((p) => `${p} used but not given`),
  ];
}
