/**
 * Writes the OpenAPI document (the one GET /api/v1/openapi.json serves) to a file, for the
 * linter and for anyone who wants it without running the API.
 *
 *   npx tsx scripts/write-openapi.ts [out-file]   (default: openapi.json)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { openApiDocument } from "../lambdas/handlers/openapi";

const out = process.argv[2] ?? "openapi.json";
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log(`wrote ${out}`);
