// Bundles each Lambda handler (lambdas/handlers/<name>.ts and all it imports) into
// packages/cdk/lambda/<name>/index.mjs, the code the JobScheduler construct deploys: built here
// once, shipped inside @jobsched/cdk, so an app that installs the construct needs no bundler and
// none of this repository's sources. The same settings `NodejsFunction` bundled with: ES module,
// Node.js 22, minified, the AWS SDK left to the Lambda runtime. No source maps: Lambda reads
// them only with --enable-source-maps, which the functions do not set (it slows cold starts),
// and they were 15 of the package's 19 MB.
// `npm ci` (postinstall), `npm test`, `cdk synth` (cdk.json) and the package's build run it.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";

const started = Date.now();
const ROOT = new URL("..", import.meta.url).pathname;
const OUT = join(ROOT, "packages/cdk/lambda");
/** Each function's bundle folder and its handler's source in lambdas/handlers/. */
const HANDLERS = {
  api: "api.ts",
  internal: "internal.ts",
  tick: "tick.ts",
  sweeper: "sweep.ts",
  dispatcher: "dispatch.ts",
};

rmSync(OUT, { recursive: true, force: true });
await Promise.all(
  Object.entries(HANDLERS).map(async ([name, source]) => {
    mkdirSync(join(OUT, name), { recursive: true });
    await build({
      entryPoints: [join(ROOT, "lambdas/handlers", source)],
      outfile: join(OUT, name, "index.mjs"),
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node22",
      minify: true,
      mainFields: ["module", "main"],
      // The Lambda runtime provides the AWS SDK v3 (and the smithy packages it is built on).
      external: ["@aws-sdk/*", "@smithy/*"],
      tsconfig: join(ROOT, "tsconfig.json"),
      legalComments: "none",
      logLevel: "warning",
      // ESM bundles still meet CommonJS dependencies that call require().
      banner: {
        js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
      },
    });
  }),
);
if (!process.argv.includes("--quiet"))
  console.log(
    `bundled ${Object.keys(HANDLERS).length} Lambdas into packages/cdk/lambda in ${Date.now() - started} ms`,
  );
