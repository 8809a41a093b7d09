/**
 * What the scripts that run the synthesized Lambda bundles on Node.js 22 share
 * (scripts/test-bundles.ts, scripts/bench-dispatcher-memory.ts): the Node.js 22 binary, each
 * function's bundle in cdk.out, and a scratch folder where the bundles sit beside the AWS SDK
 * only, as the Lambda runtime provides it.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");
const NODE_22 = "22.23.5";

/** The functions and their CloudFormation logical id prefixes (packages/cdk/src/scheduler-functions.ts). */
export const FUNCTIONS = {
  api: "FunctionsApi",
  internal: "FunctionsInternal",
  tick: "FunctionsTick",
  sweeper: "FunctionsSweeper",
  dispatcher: "FunctionsDispatcher",
} as const;
export type FunctionName = keyof typeof FUNCTIONS;

/** The Node.js 22 binary, from the npm registry's node-<platform>-<arch>@22 package (.cache/node22). */
export function node22(): string {
  const folder = join(ROOT, ".cache/node22");
  const pkg = `node-${process.platform}-${process.arch}`;
  const binary = join(folder, "node_modules", pkg, "bin", process.platform === "win32" ? "node.exe" : "node");
  if (!existsSync(binary)) {
    console.log(`installing ${pkg}@${NODE_22} into .cache/node22`);
    mkdirSync(folder, { recursive: true });
    execFileSync(
      "npm",
      ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", folder, `${pkg}@${NODE_22}`],
      { stdio: "inherit" },
    );
  }
  return binary;
}

/** Runs `npx cdk synth` (which bundles each function into cdk.out). */
export function synthesize(): void {
  execFileSync("npx", ["cdk", "synth", "--no-notices", "--quiet"], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** Each function's bundle (index.mjs) in cdk.out, found through the template's asset metadata. */
function bundles(names: readonly FunctionName[]): Record<string, string> {
  const templatePath = join(ROOT, "cdk.out/Jobsched.template.json");
  if (!existsSync(templatePath))
    throw new Error("no cdk.out/Jobsched.template.json: run `npx cdk synth` (or pass --synth)");
  const template = JSON.parse(readFileSync(templatePath, "utf8")) as {
    Resources: Record<string, { Type: string; Metadata?: Record<string, string> }>;
  };
  const found: Record<string, string> = {};
  for (const name of names) {
    const entry = Object.entries(template.Resources).find(
      ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith(FUNCTIONS[name]),
    );
    const asset = entry?.[1].Metadata?.["aws:asset:path"];
    const file = asset ? join(ROOT, "cdk.out", asset, "index.mjs") : "";
    if (!existsSync(file))
      throw new Error(`no bundle for the ${name} function in cdk.out (synthesized without bundling?)`);
    found[name] = file;
  }
  return found;
}

/**
 * The named bundles copied into a scratch folder, each in a folder of its own beside a
 * node_modules that holds the AWS SDK only; their paths by function name.
 */
export function placeBundles(names: readonly FunctionName[]): {
  readonly scratch: string;
  readonly placed: Record<string, string>;
} {
  const scratch = mkdtempSync(join(tmpdir(), "jobsched-bundles-"));
  mkdirSync(join(scratch, "node_modules"));
  symlinkSync(join(ROOT, "node_modules/@aws-sdk"), join(scratch, "node_modules/@aws-sdk"), "dir");
  const placed: Record<string, string> = {};
  for (const [name, file] of Object.entries(bundles(names))) {
    const folder = join(scratch, name);
    mkdirSync(folder);
    copyFileSync(file, join(folder, "index.mjs"));
    placed[name] = join(folder, "index.mjs");
  }
  return { scratch, placed };
}

/**
 * What every bundle script gives a function's process: the region, the local credentials, and
 * quieter logs than the stack's (it leaves Powertools at INFO, with metrics): a script that
 * measures the work of logging sets the level back.
 */
export const BUNDLE_BASE_ENV = {
  PATH: process.env.PATH ?? "",
  AWS_REGION: "us-east-1",
  AWS_ACCESS_KEY_ID: "local",
  AWS_SECRET_ACCESS_KEY: "local",
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
  POWERTOOLS_SERVICE_NAME: "jobsched",
  POWERTOOLS_LOG_LEVEL: "WARN",
  POWERTOOLS_METRICS_DISABLED: "true",
} as const;
