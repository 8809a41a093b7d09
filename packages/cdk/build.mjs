// Builds @jobsched/cdk: the construct code bundled into one CommonJS file (dist/index.cjs; CDK
// apps are CommonJS as often as not, and an ES module app imports it as well), its types
// bundled into one declaration file (dist/index.d.ts, dts-bundle-generator), and the Lambda
// bundles it deploys (lambda/, scripts/build-lambdas.mjs). aws-cdk-lib, constructs and zod stay
// dependencies; the repository's shared definitions (settings schema, routes, table, queues)
// and @jobsched/contract are bundled in.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { build } from "esbuild";

const HERE = new URL(".", import.meta.url).pathname;
const ROOT = join(HERE, "../..");

execFileSync(process.execPath, [join(ROOT, "scripts/build-lambdas.mjs"), "--quiet"], { stdio: "inherit" });
await build({
  entryPoints: [join(HERE, "src/index.ts")],
  outfile: join(HERE, "dist/index.cjs"),
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  tsconfig: join(ROOT, "tsconfig.json"),
  external: ["aws-cdk-lib", "aws-cdk-lib/*", "constructs", "zod"],
  // The construct finds its Lambda bundles beside it: ../lambda from src/ and from dist/ alike.
  define: { "import.meta.dirname": "__dirname" },
  legalComments: "none",
  logLevel: "warning",
});
execFileSync(
  join(ROOT, "node_modules/.bin/dts-bundle-generator"),
  [
    "--silent",
    "--no-banner",
    "--project",
    join(HERE, "tsconfig.build.json"),
    "--out-file",
    join(HERE, "dist/index.d.ts"),
    join(HERE, "src/index.ts"),
  ],
  { stdio: "inherit" },
);
