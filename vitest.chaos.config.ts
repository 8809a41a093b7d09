import { defineConfig } from "vitest/config";
import { workspaceAliases } from "./vitest.workspace-aliases";

/**
 * `npm run test:chaos`: the crash-loop test alone (about ten minutes, so not part of `npm test`).
 * It starts the local runtime and its workers as child processes; no global setup is needed.
 */
export default defineConfig({
  resolve: { alias: workspaceAliases },
  test: {
    setupFiles: ["test/support/setup-env.ts"],
    include: ["test/chaos/**/*.test.ts"],
    testTimeout: 20 * 60_000,
  },
});
