import middy from "@middy/core";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import type { SchedulerDeps } from "../core/deps";
import { runTick } from "../core/use-cases/tick";

let deps: SchedulerDeps | undefined;

/** EventBridge's minute rule invokes this: fan the sweep out, then repair lost deliveries. */
export const handler = middy().handler(async () => {
  deps ??= createSchedulerDeps(configFromEnvironment());
  const result = await runTick(deps);
  if (result.repair.resent > 0) deps.log.info("tick", { ...result.repair });
  return result;
});
