// Bundles the CLI (cli/run.ts and everything it imports) into dist/jobsched.mjs, one file that
// runs on Node.js 20+ with no node_modules at all. `npm ci` (postinstall), `npm start` and
// `npm test` run it, so bin/jobsched.mjs never needs tsx or another dev dependency.
import { copyFileSync, mkdirSync } from "node:fs";
import { build } from "esbuild";

const started = Date.now();
// The console's page (jobsched console): its script for browsers, next to the CLI that serves it.
mkdirSync("dist/console", { recursive: true });
await build({
  entryPoints: ["console/app.tsx"],
  outfile: "dist/console/app.js",
  bundle: true,
  platform: "browser",
  format: "esm",
  target: "es2022",
  minify: true,
  tsconfig: "console/tsconfig.json",
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync("console/index.html", "dist/console/index.html");
await build({
  entryPoints: ["cli/run.ts"],
  outfile: "dist/jobsched.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  tsconfig: "tsconfig.json",
  legalComments: "none",
  logLevel: "warning",
  // CommonJS dependencies inside an ES module bundle still call require().
  banner: {
    js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  },
});
if (!process.argv.includes("--quiet")) console.log(`built dist/jobsched.mjs in ${Date.now() - started} ms`);
