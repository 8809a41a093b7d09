import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
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
  // The run store's shared condition fragments (split from it: its lease and hold guards).
  "lambdas/adapters/dynamo/run-expressions.ts",
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

/**
 * Object literals in `files` that set `status` on a run: their contextual type (what they are
 * assigned, returned or passed as) names Run or RunRecord (Pick<Run, ...> and Partial<Run>
 * too), or they spread a run. Found by TypeScript's own checker, so a string literal, a
 * variable or a spread counts as much as `RunStatus.X`.
 */
let found: string[] | undefined;
function runStatusWrites(only: (file: string) => boolean): string[] {
  found ??= findRunStatusWrites();
  return found.filter((at) => only(at.slice(0, at.lastIndexOf(":"))));
}

function findRunStatusWrites(): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error("tsconfig.json not read");
  const roots = config.fileNames.filter((f) => files.includes(relative(ROOT, f)));
  const program = ts.createProgram({ rootNames: roots, options: config.options });
  const checker = program.getTypeChecker();
  const isRun = (type: ts.Type) =>
    (type.isUnion() ? type.types : [type]).some((t) => /\bRun(Record)?\b/.test(checker.typeToString(t)));
  const found: string[] = [];
  for (const source of program.getSourceFiles()) {
    const file = relative(ROOT, source.fileName);
    if (!files.includes(file)) continue;
    const visit = (node: ts.Node) => {
      if (ts.isObjectLiteralExpression(node)) {
        const setsStatus = node.properties.some(
          (p) =>
            !ts.isSpreadAssignment(p) &&
            p.name !== undefined &&
            ts.isIdentifier(p.name) &&
            p.name.text === "status",
        );
        const spreadsRun = node.properties.some(
          (p) => ts.isSpreadAssignment(p) && isRun(checker.getTypeAtLocation(p.expression)),
        );
        const contextual = checker.getContextualType(node);
        if (setsStatus && (spreadsRun || (contextual !== undefined && isRun(contextual))))
          found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe("where a run's status is written", () => {
  it("a run gets a status only in the lifecycle module (TypeScript's checker over every source)", () => {
    expect(runStatusWrites((file) => !file.startsWith(LIFECYCLE))).toEqual([]);
  }, 60_000);

  it("only the DynamoDB stores write a #status attribute", () => {
    const writers = files.filter((file) => /#status\s*=\s*:/.test(readFileSync(join(ROOT, file), "utf8")));
    expect(writers.sort()).toEqual([...STATUS_WRITERS].sort());
  });

  it("the check can fail: it finds the lifecycle's own writes (creation and transition)", () => {
    const inLifecycle = runStatusWrites((file) => file.startsWith(LIFECYCLE));
    expect(inLifecycle.some((at) => at.startsWith(`${LIFECYCLE}transition.ts:`))).toBe(true);
    expect(inLifecycle.some((at) => at.startsWith(`${LIFECYCLE}creation.ts:`))).toBe(true);
  }, 60_000);
});
