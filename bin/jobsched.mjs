#!/usr/bin/env node
// Entry point for the `jobsched` command: the bundled CLI (dist/jobsched.mjs), which `npm ci`,
// `npm start` and `npm test` build (scripts/build-cli.mjs). It needs no dev dependency to run.
import { existsSync } from "node:fs";

const bundle = new URL("../dist/jobsched.mjs", import.meta.url);
if (!existsSync(bundle)) {
  console.error("jobsched: the CLI is not built yet: run `npm run build:cli` (npm ci does it)");
  process.exit(1);
}
await import(bundle.href);
