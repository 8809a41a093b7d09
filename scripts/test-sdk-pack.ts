/**
 * The SDK's package test (issue 16): builds @jobsched/contract and @jobsched/worker, packs them
 * with `npm pack`, installs the two tarballs in an empty folder (their dependencies come from
 * the registry, as a user's would), and runs a worker written against the installed package
 * (scripts/sdk-pack/app.mjs) against a local runtime started for the test. Exits non-zero if
 * the package cannot be packed, installed, imported, or run.
 *
 *   npx tsx scripts/test-sdk-pack.ts
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startLocalRuntime } from "../local/spawn-runtime";

const ROOT = resolve(import.meta.dirname, "..");
const PACKAGES = ["contract", "worker"];
const run = (command: string, args: string[], cwd: string) =>
  execFileSync(command, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" });

const scratch = mkdtempSync(join(tmpdir(), "jobsched-sdk-pack-"));
const app = join(scratch, "app");
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
    JSON.stringify({ name: "sdk-user", private: true, type: "module" }),
  );
  run("npm", ["install", "--no-audit", "--no-fund", ...tarballs.map((file) => join(scratch, file))], app);
  copyFileSync(join(ROOT, "scripts/sdk-pack/app.mjs"), join(app, "app.mjs"));
  console.log("installed in an empty folder; starting a local runtime");

  const runtime = await startLocalRuntime(join(scratch, "data"));
  try {
    const output = execFileSync(process.execPath, ["app.mjs"], {
      cwd: app,
      env: { PATH: process.env.PATH ?? "", JOBSCHED_ENDPOINT: runtime.url },
      encoding: "utf8",
      timeout: 60_000,
    });
    process.stdout.write(output);
    status = 0;
  } catch (error) {
    console.error(`the packed SDK's worker failed: ${String(error)}`);
  } finally {
    await runtime.kill("SIGTERM");
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);
