import type { z } from "zod";

/**
 * An API answer's body read through the contract's schema (packages/contract): typed without a
 * hand-written shape, and a body that is not what the API defines fails the test here.
 */
export function bodyOf<S extends z.ZodType>(schema: S, response: { readonly body: unknown }): z.output<S> {
  return schema.parse(response.body);
}
