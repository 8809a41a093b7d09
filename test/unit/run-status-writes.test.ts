import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Issue 27: a run's state changes in one module, lambdas/core/lifecycle/. Outside it no source
 * file puts a run status into a `status` property (a run being made or changed), and only the
 * two DynamoDB stores write a `#status` attribute (the run store as the lifecycle's events say,
 * the job store a job's).
 */
const ROOT = join(import.meta.dirname, "../..");
const LIFECYCLE = "lambdas/core/lifecycle/";
const STATUS_WRITERS = [
  "lambdas/adapters/dynamo/dynamo-run-store.ts",
  "lambdas/adapters/dynamo/dynamo-job-store.ts",
];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

const files = ["lambdas", "cli", "local"].flatMap(sources).map((path) => relative(ROOT, join(ROOT, path)));

describe("where a run's status is written", () => {
  it("a RunStatus goes into a status property only in the lifecycle module", () => {
    const offenders = files
      .filter((file) => !file.startsWith(LIFECYCLE))
      .filter((file) => /\bstatus:\s*RunStatus\./.test(readFileSync(join(ROOT, file), "utf8")));
    expect(offenders).toEqual([]);
  });

  it("only the DynamoDB stores write a #status attribute", () => {
    const writers = files.filter((file) => /#status\s*=\s*:/.test(readFileSync(join(ROOT, file), "utf8")));
    expect(writers.sort()).toEqual([...STATUS_WRITERS].sort());
  });

  it("the check can fail: the lifecycle's own files do put statuses into runs", () => {
    const inLifecycle = files.filter(
      (file) =>
        file.startsWith(LIFECYCLE) && /\bstatus:\s*RunStatus\./.test(readFileSync(join(ROOT, file), "utf8")),
    );
    expect(inLifecycle.length).toBeGreaterThan(0);
  });
});
