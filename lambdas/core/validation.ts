import type { z } from "zod";
import { ValidationError } from "./errors";

/**
 * Parses input with a zod schema; on failure throws a ValidationError naming the first
 * offending field as a dotted path ("payload", "retry.base"), which the edge turns into a 400.
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, rootField = "body"): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  // zod reports at least one issue for every failure.
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const unknownKey = issue.code === "unrecognized_keys" ? issue.keys[0] : undefined;
  const path = [...issue.path, ...(unknownKey === undefined ? [] : [unknownKey])].map(String).join(".");
  // A problem with the whole input (not an object, say) is about the body or the query itself.
  const field = path === "" ? rootField : path;
  const message = unknownKey === undefined ? issue.message : `unknown field "${unknownKey}"`;
  throw new ValidationError(`${field}: ${message}`, field);
}
