import { defineConfig } from "vitest/config";
import { workspaceAliases } from "./vitest.workspace-aliases";

/**
 * Three projects: `unit` tests the pure core with a fake clock and in-memory ports (no emulator,
 * modules shared between files for speed); `integration` holds the adapter, handler,
 * end-to-end and CDK tests, with dynalite and fauxqs started once by the global setup;
 * `browser` drives the web console in Debian's Chromium (installed by its setup when missing).
 */
export default defineConfig({
  resolve: { alias: workspaceAliases },
  test: {
    setupFiles: ["test/support/setup-env.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    coverage: {
      provider: "v8",
      include: ["lambdas/core/**/*.ts", "packages/contract/src/**/*.ts"],
      reporter: ["text-summary", "text"],
      // The core's own tests must cover it: `npm run test:coverage` runs the unit project only.
      thresholds: { lines: 95, branches: 95, functions: 95, statements: 95 },
    },
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], isolate: false },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/adapters/**/*.test.ts", "test/integration/**/*.test.ts", "test/infra/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts", "test/support/chromium-setup.ts"],
          testTimeout: 60_000,
        },
      },
    ],
  },
});
