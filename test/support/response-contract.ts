import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { openApiDocument } from "../../lambdas/handlers/openapi";
import type { HttpHandler } from "../../local/http-gateway";

/**
 * Checks a handler's answer against the OpenAPI document the API serves: the response for its
 * route and status must be described there, and its body must match that schema with every
 * object read as closed (a field the document does not name fails, though the document itself
 * leaves objects open for clients). startTestApi wraps both handlers with it, so every body an
 * integration test sees through the API is checked (issue 16).
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The document with `additionalProperties: false` on every object schema that has properties. */
function closed(node: Json): Json {
  if (Array.isArray(node)) return node.map(closed);
  if (node === null || typeof node !== "object") return node;
  const copy: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) copy[key] = closed(value);
  if (copy.type === "object" && copy.properties !== undefined && copy.additionalProperties === undefined) {
    copy.additionalProperties = false;
  }
  return copy;
}

const SELF = "https://jobsched.local/openapi.json";
let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

function pointerPart(text: string): string {
  return text.replaceAll("~", "~0").replaceAll("/", "~1");
}

function validatorFor(method: string, path: string, status: number): ValidateFunction | undefined {
  const key = `${method} ${path} ${status}`;
  const known = compiled.get(key);
  if (known) return known;
  const document = openApiDocument() as unknown as {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>
    >;
  };
  const response = document.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
  if (!response?.content?.["application/json"]) return undefined;
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ ...(closed(document as unknown as Json) as object), $id: SELF });
  }
  const pointer = [
    "paths",
    path,
    method.toLowerCase(),
    "responses",
    String(status),
    "content",
    "application/json",
    "schema",
  ]
    .map(pointerPart)
    .join("/");
  const validate = ajv.compile({ $ref: `${SELF}#/${pointer}` });
  compiled.set(key, validate);
  return validate;
}

/** Throws if `result` is not a response the document describes for `routeKey`. */
export function checkResponse(routeKey: string, result: APIGatewayProxyStructuredResultV2): void {
  const [method = "", path = ""] = routeKey.split(" ");
  const status = result.statusCode ?? 200;
  const validate = validatorFor(method, path, status);
  if (!validate) {
    throw new Error(`${routeKey} answered ${status}, a status its OpenAPI description does not list`);
  }
  const body: unknown = result.body === undefined || result.body === "" ? undefined : JSON.parse(result.body);
  if (!validate(body)) {
    const problems = (validate.errors ?? [])
      .map((e) => `${e.instancePath || "/"} ${e.message ?? ""}`)
      .join("; ");
    throw new Error(`${routeKey} ${status}: body does not match the OpenAPI document: ${problems}`);
  }
}

/** The handler, each of its answers checked with checkResponse (a mismatch becomes a 599 and a recorded failure). */
export function contractChecked(handler: HttpHandler, failures: string[]): HttpHandler {
  return async (event, context) => {
    const result = await handler(event, context);
    try {
      checkResponse(event.routeKey, result);
    } catch (error) {
      failures.push((error as Error).message);
    }
    return result;
  };
}
