import type { SQSClient } from "@aws-sdk/client-sqs";
import { FUNCTION_MEMORY_MB } from "../lambdas/definitions/functions";

/** What bench-cost prices with, and how it counts SQS requests. */

/** List prices (us-east-1), USD. */
export const PRICE = {
  dynamoWriteUnit: 0.625 / 1e6,
  dynamoReadUnit: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  httpApiRequest: 1.0 / 1e6,
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecondArm: 0.0000133334,
  /** Provisioned capacity: per WCU-hour and RCU-hour. */
  dynamoWcuHour: 0.00065,
  dynamoRcuHour: 0.00013,
  eventBridgeRuleInvocation: 0, // scheduled rules on the default bus are free
};
/**
 * AWS polls an SQS event source mapping with 5 pollers to begin with, each long-polling up to
 * 20 s (Lambda's documentation, "Using Lambda with Amazon SQS", scaling behaviour); the stack has
 * two (the sweep queue and the push queue; packages/cdk/src/scheduler-functions.ts).
 */
export const ESM_POLLERS = 5;
export const ESM_QUEUES = 2;
/** GB of each function, as the stack configures it. */
export const MEMORY_GB = {
  api: FUNCTION_MEMORY_MB.api / 1024,
  tick: FUNCTION_MEMORY_MB.tick / 1024,
  internal: FUNCTION_MEMORY_MB.internal / 1024,
  sweeper: FUNCTION_MEMORY_MB.sweeper / 1024,
  dispatcher: FUNCTION_MEMORY_MB.dispatcher / 1024,
};
/**
 * Provisioned capacity is paid by the hour whether used or not; priced here at the 70%
 * utilisation DynamoDB auto scaling targets by default (a unit-second used costs 1/0.7 of its price).
 */
export const PROVISIONED_UTILISATION = 0.7;

/** Counts SQS requests by command, from one client middleware. */
export function meterRequests(client: SQSClient, calls: Record<string, number> = {}) {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context.commandName ?? "unknown").replace(/Command$/, "");
      calls[name] = (calls[name] ?? 0) + 1;
      return next(args);
    },
    { step: "initialize", name: "jobschedRequestMeter" },
  );
  return calls;
}
