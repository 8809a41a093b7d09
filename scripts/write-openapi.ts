/**
 * Writes the OpenAPI document (the one GET /api/v1/openapi.json serves) to a file, for the
 * linter and for anyone who wants it without running the API.
 *
 *   npx tsx scripts/write-openapi.ts [out-file]   (default: openapi.json)
 */
import { writeFileSync } from "node:fs";
import { openApiDocument } from "../lambdas/handlers/openapi";

const out = process.argv[2] ?? "openapi.json";
writeFileSync(out, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log(`wrote ${out}`);
