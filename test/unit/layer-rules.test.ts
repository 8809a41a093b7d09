import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The layer rules in biome.json, checked by linting probe files with the project's own
 * configuration in a scratch folder: the core (every file under lambdas/core/, however deep)
 * imports no AWS SDK, no adapter, no handler and nothing of the infrastructure or the tools;
 * the packages (packages/*) import none of the server's or the tools' files.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const scratch = mkdtempSync(join(tmpdir(), "jobsched-layers-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
copyFileSync(join(ROOT, "biome.json"), join(scratch, "biome.json"));

interface Report {
  diagnostics: Array<{ category?: string; location?: { path?: string } }>;
}

/**
 * The files among `probes` (path -> one import, or `{ source }`: a file's whole text) that break
 * a restricted-import rule (or the restricted-globals rule).
 */
function refused(probes: Record<string, string | { source: string }>): string[] {
  const folder = mkdtempSync(join(scratch, "probe-"));
  copyFileSync(join(scratch, "biome.json"), join(folder, "biome.json"));
  for (const [path, probe] of Object.entries(probes)) {
    mkdirSync(join(folder, dirname(path)), { recursive: true });
    const source =
      typeof probe === "string" ? `import { x } from "${probe}";\n\nexport const y = x;\n` : probe.source;
    writeFileSync(join(folder, path), source);
  }
  let output: string;
  try {
    output = execFileSync(
      join(ROOT, "node_modules/.bin/biome"),
      ["lint", "--vcs-enabled=false", "--reporter=json", "."],
      {
        cwd: folder,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      },
    );
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? "");
  }
  const report = JSON.parse(output) as Report;
  return [
    ...new Set(
      report.diagnostics
        .filter(
          (d) =>
            d.category === "lint/style/noRestrictedImports" ||
            d.category === "lint/style/noRestrictedGlobals",
        )
        .map((d) => String(d.location?.path ?? "").replace(/^\.\//, "")),
    ),
  ].sort();
}

describe("the core's layer rules", () => {
  it("refuse an adapter, a handler, the AWS SDK or the infrastructure from any file under lambdas/core/", () => {
    const probes = {
      "lambdas/core/direct.ts": "../adapters/logger",
      "lambdas/core/use-cases/adapter.ts": "../../adapters/dynamo/conditions",
      "lambdas/core/use-cases/handler.ts": "../../handlers/api",
      "lambdas/core/schedule/sdk.ts": "@aws-sdk/client-dynamodb",
      "lambdas/core/schedule/smithy.ts": "@smithy/types",
      "lambdas/core/use-cases/cdk.ts": "aws-cdk-lib",
      "lambdas/core/use-cases/local.ts": "../../../local/emulators",
      "lambdas/core/use-cases/sdk-package.ts": "@jobsched/worker",
    };
    expect(refused(probes)).toEqual(Object.keys(probes).sort());
  });

  it("let the core import itself, its definitions, zod and luxon, and let adapters import anything", () => {
    expect(
      refused({
        "lambdas/core/use-cases/core.ts": "../schedule/cron",
        "lambdas/core/use-cases/definitions.ts": "../../definitions/settings",
        "lambdas/core/zod.ts": "zod",
        "lambdas/core/schedule/luxon.ts": "luxon",
        "lambdas/core/contract.ts": "@jobsched/contract",
        "lambdas/adapters/sdk.ts": "@aws-sdk/client-dynamodb",
      }),
    ).toEqual([]);
  });
});

describe("the packages' layer rules", () => {
  it("keep the SDK and the contract free of the server's and the tools' files", () => {
    const probes = {
      "packages/worker/src/server.ts": "../../../lambdas/core/run",
      "packages/worker/src/local.ts": "../../../local/emulators",
      "packages/worker/src/sdk.ts": "@aws-sdk/client-dynamodb",
      "packages/worker/src/document.ts": "@aws-sdk/lib-dynamodb",
      "packages/contract/src/smithy.ts": "@smithy/types",
      "packages/contract/src/worker.ts": "@jobsched/worker",
      "packages/contract/src/core.ts": "../../../lambdas/core/run",
    };
    expect(refused(probes)).toEqual(Object.keys(probes).sort());
  });

  it("let the SDK import the contract, smithy, the credential chain, SQS's client (its lane listening) and its own modules", () => {
    expect(
      refused({
        "packages/worker/src/contract.ts": "@jobsched/contract",
        "packages/worker/src/smithy.ts": "@smithy/signature-v4",
        "packages/worker/src/credentials.ts": "@aws-sdk/credential-providers",
        "packages/worker/src/lanes.ts": "@aws-sdk/client-sqs",
        "packages/worker/src/own.ts": "./run-hold.js",
        "packages/contract/src/zod.ts": "zod",
      }),
    ).toEqual([]);
  });
});

describe("the one way out to the API (issue 29)", () => {
  it("refuses fetch, XMLHttpRequest, https, http.request and the signing packages in the CLI and the console", () => {
    const probes = {
      "cli/commands/fetches.ts": { source: 'export const y = fetch("http://127.0.0.1:8787/api/v1/jobs");\n' },
      "console/pages/xhr.tsx": { source: "export const y = new XMLHttpRequest();\n" },
      "cli/https.ts": "node:https",
      "cli/console/request.ts": {
        source: 'import { request } from "node:http";\n\nexport const y = request;\n',
      },
      "cli/signer.ts": "@smithy/signature-v4",
      "console/undici.ts": "undici",
    };
    expect(refused(probes)).toEqual(Object.keys(probes).sort());
  });

  it("refuses node:http as a whole (a namespace import too), http2, net and tls", () => {
    const probes = {
      "cli/namespace.ts": {
        source: 'import * as http from "node:http";\n\nexport const y = http.request;\n',
      },
      "cli/http2.ts": "node:http2",
      "console/net.ts": "node:net",
      "cli/commands/tls.ts": "node:tls",
    };
    expect(refused(probes)).toEqual(Object.keys(probes).sort());
  });

  it("finds no fetch by another name in the CLI's and the console's sources (what biome cannot see)", () => {
    const sources = execFileSync("git", ["ls-files", "cli", "console"], { cwd: ROOT, encoding: "utf8" })
      .split("\n")
      .filter((file) => /\.(ts|tsx|mjs|js)$/.test(file));
    expect(sources.length).toBeGreaterThan(20);
    const found = sources.filter((file) =>
      /\b(globalThis|window|self)\s*(\.|\[\s*["'])\s*fetch\b|\bfetch\s*\(|XMLHttpRequest|sendBeacon/.test(
        readFileSync(join(ROOT, file), "utf8"),
      ),
    );
    expect(found).toEqual([]);
  });

  it("lets them use the client, and a server of their own (the console's relay)", () => {
    expect(
      refused({
        "cli/client.ts": "@jobsched/client",
        "console/client.ts": "@jobsched/client/core",
        "cli/console/console-server.ts": {
          source: 'import { createServer } from "node:http";\n\nexport const y = createServer;\n',
        },
      }),
    ).toEqual([]);
  });

  it("keeps the contract free of Node's built-ins, so it runs in the console's page", () => {
    const probes = {
      "packages/contract/src/crypto.ts": "node:crypto",
      "packages/contract/src/bytes.ts": { source: 'export const y = Buffer.byteLength("x");\n' },
    };
    expect(refused(probes)).toEqual(Object.keys(probes).sort());
  });
});

describe("the construct package's layer rules (decision 0061)", () => {
  it("let @jobsched/cdk import the shared definitions, aws-cdk-lib and its own modules", () => {
    expect(
      refused({
        "packages/cdk/src/settings.ts": "../../../lambdas/definitions/settings",
        "packages/cdk/src/cdk.ts": "aws-cdk-lib/aws-lambda",
        "packages/cdk/src/own.ts": "./stack-limits",
      }),
    ).toEqual([]);
  });

  it("refuse it the server's core, adapters and handlers, the tools, and the AWS SDK", () => {
    const probes = {
      "packages/cdk/src/core.ts": "../../../lambdas/core/run",
      "packages/cdk/src/adapter.ts": "../../../lambdas/adapters/logger",
      "packages/cdk/src/handler.ts": "../../../lambdas/handlers/api",
      "packages/cdk/src/local.ts": "../../../local/emulators",
      "packages/cdk/src/sdk.ts": "@aws-sdk/client-dynamodb",
    };
    expect(refused(probes)).toEqual(Object.keys(probes).sort());
  });
});
