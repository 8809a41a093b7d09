/**
 * The bundle test (issue 16): runs the Lambda bundles that `cdk deploy` would upload (cdk.out,
 * from `npx cdk synth`) on Node.js 22, the runtime's major version, against the local
 * emulators, with only the AWS SDK beside them as the Lambda runtime provides it. Every test
 * imports the TypeScript sources on Node 20; this one catches what only the shipped bundle
 * shows (a dependency not bundled, an ESM/CJS mix-up, an API Node 22 changed).
 *
 *   npx tsx scripts/test-bundles.ts [--synth]
 *
 * --synth runs `npx cdk synth` first (CI synthesizes anyway). The Node.js 22 binary comes from
 * the npm registry's node-<platform>-<arch>@22 package, installed into .cache/node22 on first
 * use. Exits non-zero if a bundle cannot load or handle its event.
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { LOCAL_SETTINGS, settingsEnvironment } from "../lambdas/definitions/settings";
import { bootstrapStack } from "../local/bootstrap";
import { startDynamo, startSqs } from "../local/emulators";

const ROOT = resolve(import.meta.dirname, "..");
const NODE_22 = "22.23.5";
const TENANT = "arn:aws:iam::000000000000:role/tenant-a";
const WORKER = "arn:aws:iam::000000000000:role/jobsched-worker";
/** The functions and their CloudFormation logical id prefixes (lib/scheduler-functions.ts). */
const FUNCTIONS = {
  api: "FunctionsApi",
  internal: "FunctionsInternal",
  tick: "FunctionsTick",
  sweeper: "FunctionsSweeper",
};

function node22(): string {
  const folder = join(ROOT, ".cache/node22");
  const pkg = `node-${process.platform}-${process.arch}`;
  const binary = join(folder, "node_modules", pkg, "bin", process.platform === "win32" ? "node.exe" : "node");
  if (!existsSync(binary)) {
    console.log(`installing ${pkg}@${NODE_22} into .cache/node22`);
    mkdirSync(folder, { recursive: true });
    execFileSync(
      "npm",
      ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", folder, `${pkg}@${NODE_22}`],
      {
        stdio: "inherit",
      },
    );
  }
  return binary;
}

/** Each function's bundle (index.mjs) in cdk.out, found through the template's asset metadata. */
function bundles(): Record<string, string> {
  const templatePath = join(ROOT, "cdk.out/Jobsched.template.json");
  if (!existsSync(templatePath))
    throw new Error("no cdk.out/Jobsched.template.json: run `npx cdk synth` (or pass --synth)");
  const template = JSON.parse(readFileSync(templatePath, "utf8")) as {
    Resources: Record<string, { Type: string; Metadata?: Record<string, string> }>;
  };
  const found: Record<string, string> = {};
  for (const [name, prefix] of Object.entries(FUNCTIONS)) {
    const entry = Object.entries(template.Resources).find(
      ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith(prefix),
    );
    const asset = entry?.[1].Metadata?.["aws:asset:path"];
    const file = asset ? join(ROOT, "cdk.out", asset, "index.mjs") : "";
    if (!existsSync(file))
      throw new Error(`no bundle for the ${name} function in cdk.out (synthesized without bundling?)`);
    found[name] = file;
  }
  return found;
}

if (process.argv.includes("--synth")) {
  execFileSync("npx", ["cdk", "synth", "--no-notices", "--quiet"], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
}
const binary = node22();
const sources = bundles();

// The bundles, each in a folder of its own beside a node_modules that holds the AWS SDK only.
const scratch = mkdtempSync(join(tmpdir(), "jobsched-bundles-"));
mkdirSync(join(scratch, "node_modules"));
symlinkSync(join(ROOT, "node_modules/@aws-sdk"), join(scratch, "node_modules/@aws-sdk"), "dir");
const placed: Record<string, string> = {};
for (const [name, file] of Object.entries(sources)) {
  const folder = join(scratch, name);
  mkdirSync(folder);
  copyFileSync(file, join(folder, "index.mjs"));
  placed[name] = join(folder, "index.mjs");
}

const [dynamo, sqs] = await Promise.all([startDynamo(), startSqs()]);
let status = 1;
try {
  const config = await bootstrapStack({
    dynamodbEndpoint: dynamo.endpoint,
    sqsEndpoint: sqs.endpoint,
    tableName: "bundle-test",
    settings: LOCAL_SETTINGS,
  });
  // Asynchronously: the emulators answer from this process's event loop.
  const child = spawn(binary, [join(ROOT, "scripts/bundles/harness.mjs")], {
    cwd: ROOT,
    stdio: "inherit",
    timeout: 120_000,
    env: {
      PATH: process.env.PATH ?? "",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      POWERTOOLS_SERVICE_NAME: "jobsched",
      POWERTOOLS_LOG_LEVEL: "WARN",
      POWERTOOLS_METRICS_DISABLED: "true",
      TABLE_NAME: config.tableName,
      RUN_QUEUE_URL: config.runQueueUrl,
      SWEEP_QUEUE_URL: config.sweepQueueUrl,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      SQS_ENDPOINT: sqs.endpoint,
      WORKER_BINDINGS: JSON.stringify({ [WORKER]: [TENANT] }),
      ...settingsEnvironment(LOCAL_SETTINGS),
      JOBSCHED_BUNDLES: JSON.stringify(placed),
      JOBSCHED_TENANT: TENANT,
      JOBSCHED_WORKER: WORKER,
    },
  });
  status = await new Promise<number>((done) => {
    child.on("error", (error) => {
      console.error(error);
      done(1);
    });
    child.on("exit", (code) => done(code ?? 1));
  });
} finally {
  await Promise.all([dynamo.close(), sqs.close()]);
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);
