import type { SQSClient } from "@aws-sdk/client-sqs";
import type { HandlerDeps } from "../lambdas/adapters/scheduler-deps";
import { DISPATCHER_MAX_CONCURRENCY, FUNCTION_TIMEOUT_SECONDS } from "../lambdas/definitions/functions";
import { createDispatchDeps, createDispatchHandler } from "../lambdas/handlers/dispatch";
import { type LocalFunctions, localReach } from "./local-functions";
import { startSqsEventSource } from "./sqs-event-source";

type DispatchHandler = ReturnType<typeof createDispatchHandler>;

/**
 * The dispatcher Lambda on the local runtime: the push queue's event source, scaling like
 * Lambda's, handing batches of 10 to the real handler, with `lambda` targets from the local
 * functions file and `sqs` targets on the SQS emulator.
 */
export function startLocalDispatcher(
  deps: HandlerDeps,
  sqs: SQSClient,
  pushQueueUrl: string,
  functions: LocalFunctions,
  sqsEndpoint: string,
  /** Wraps the handler (bench-cost meters its invocations). */
  wrap: (handler: DispatchHandler) => DispatchHandler = (handler) => handler,
): { stop(): Promise<void> } {
  const reach = localReach(functions, sqsEndpoint);
  const handler = wrap(createDispatchHandler(createDispatchDeps(deps, reach), pushQueueUrl));
  return startSqsEventSource(sqs, pushQueueUrl, handler, {
    batchSize: 10,
    // Lambda's event source starts with five pollers.
    concurrency: 5,
    maxConcurrency: DISPATCHER_MAX_CONCURRENCY,
    functionName: "dispatcher",
    timeoutMs: FUNCTION_TIMEOUT_SECONDS.dispatcher * 1000,
    onError: (error) => deps.log.error("dispatch poll failed", { error: String(error) }),
  });
}
