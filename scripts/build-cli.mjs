// Bundles the CLI (cli/run.ts and everything it imports) into dist/jobsched.mjs, one file that
// runs on Node.js 20+ with no node_modules at all. `npm ci` (postinstall), `npm start` and
// `npm test` run it, so bin/jobsched.mjs never needs tsx or another dev dependency.
import { build } from "esbuild";

const started = Date.now();
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
