/**
 * The packages as users get them (issues 16 and 29): builds @jobsched/contract, @jobsched/client,
 * @jobsched/worker and @jobsched/cdk, packs them with `npm pack`, installs the tarballs in empty
 * folders (their dependencies come from the registry, as a user's would), and:
 * - type-checks a TypeScript service written against the installed client (strict tsc) and runs
 *   it against a local runtime started for the test: it creates a job and reads it back typed
 *   (scripts/packages-app/client-app.ts);
 * - runs a worker written against the installed worker SDK (scripts/packages-app/worker-app.mjs);
 * - copies the sample CDK app (examples/cdk-app) to a folder of its own, installs the packed
 *   construct there, type-checks it and runs `cdk synth` with cdk-nag's checks over it.
 * Exits non-zero if a package cannot be packed, installed, type-checked, imported, run or
 * synthesized.
 *
 *   npm run test:packages
 */
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startLocalRuntime } from "../local/spawn-runtime";

const ROOT = resolve(import.meta.dirname, "..");
const PACKAGES = ["contract", "client", "worker", "cdk"];
/** The TypeScript the user's service is checked with: the repository's own version. */
const TYPESCRIPT = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> }
).devDependencies.typescript;
const run = (command: string, args: string[], cwd: string) =>
  execFileSync(command, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" });

const scratch = mkdtempSync(join(tmpdir(), "jobsched-packages-"));
const app = join(scratch, "app");
const cdkApp = join(scratch, "cdk-app");
let status = 1;
try {
  for (const name of PACKAGES) run("npm", ["run", "build", "-w", `@jobsched/${name}`], ROOT);
  for (const name of PACKAGES)
    run("npm", ["pack", "--pack-destination", scratch, join(ROOT, "packages", name)], ROOT);
  const tarballs = readdirSync(scratch).filter((file) => file.endsWith(".tgz"));
  console.log(`packed: ${tarballs.join(", ")}`);

  mkdirSync(app, { recursive: true });
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "packages-user", private: true, type: "module" }),
  );
  run(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      ...tarballs.filter((file) => !file.includes("-cdk-")).map((file) => join(scratch, file)),
      `typescript@${TYPESCRIPT}`,
      "@types/node@20",
    ],
    app,
  );
  for (const file of ["client-app.ts", "worker-app.mjs"])
    copyFileSync(join(ROOT, "scripts/packages-app", file), join(app, file));
  // A user's strict settings, resolving packages as Node does (their exports maps, no paths).
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noUncheckedIndexedAccess: true,
        types: ["node"],
        outDir: "out",
      },
      files: ["client-app.ts"],
    }),
  );
  run(join(app, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], app);
  console.log("installed in an empty folder; the client's user type-checks; starting a local runtime");

  // The sample CDK app, as a team with its own app installs the construct: only the tarball is local.
  cpSync(join(ROOT, "examples/cdk-app"), cdkApp, { recursive: true });
  const construct = tarballs.find((file) => file.includes("-cdk-"));
  if (construct === undefined) throw new Error("@jobsched/cdk was not packed");
  run("npm", ["install", "--no-audit", "--no-fund", join(scratch, construct), "@types/node@20"], cdkApp);
  run(join(cdkApp, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], cdkApp);
  run(join(cdkApp, "node_modules/.bin/cdk"), ["synth", "--no-notices", "--quiet"], cdkApp);
  const template = JSON.parse(readFileSync(join(cdkApp, "cdk.out/Reminders.template.json"), "utf8")) as {
    Resources: Record<string, { Type: string }>;
  };
  const functions = Object.values(template.Resources).filter((r) => r.Type === "AWS::Lambda::Function");
  if (functions.length !== 5)
    throw new Error(`the sample app has ${functions.length} Lambda functions, not 5`);
  console.log("the sample CDK app type-checks and synthesizes from the installed construct, cdk-nag clean");

  const runtime = await startLocalRuntime(join(scratch, "data"));
  try {
    for (const script of ["out/client-app.js", "worker-app.mjs"]) {
      const output = execFileSync(process.execPath, [script], {
        cwd: app,
        env: { PATH: process.env.PATH ?? "", JOBSCHED_ENDPOINT: runtime.url },
        encoding: "utf8",
        timeout: 60_000,
      });
      process.stdout.write(output);
    }
    status = 0;
  } catch (error) {
    console.error(`a packed package's user failed: ${String(error)}`);
  } finally {
    await runtime.kill("SIGTERM");
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);
