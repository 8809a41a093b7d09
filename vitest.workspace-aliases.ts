import { fileURLToPath } from "node:url";

/** The workspace packages from their sources in tests (tsconfig.json's `paths`, for vite). */
export const workspaceAliases = {
  "@jobsched/cdk": fileURLToPath(new URL("./packages/cdk/src/index.ts", import.meta.url)),
  "@jobsched/client/core": fileURLToPath(new URL("./packages/client/src/core.ts", import.meta.url)),
  "@jobsched/client": fileURLToPath(new URL("./packages/client/src/index.ts", import.meta.url)),
  "@jobsched/contract": fileURLToPath(new URL("./packages/contract/src/index.ts", import.meta.url)),
  "@jobsched/worker": fileURLToPath(new URL("./packages/worker/src/index.ts", import.meta.url)),
};
