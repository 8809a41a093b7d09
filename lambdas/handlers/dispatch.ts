import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { configFromEnvironment } from "../adapters/environment";
import { createSchedulerDeps } from "../adapters/scheduler-deps";
import { handleOf, parseRunMessage } from "../adapters/sqs/sqs-run-queue";
import { cloudReach, Targets } from "../adapters/targets/target-invoker";
import { InProcessTargetSlots } from "../adapters/targets/target-slots";
import { InProcessTenantShares } from "../adapters/targets/tenant-shares";
import { destinationRulesOf } from "../core/destination-rules";
import type { ReceivedRunMessage, RunQueue } from "../core/ports";
import type { TenantShares } from "../core/tenant-shares";
import { type DispatchDeps, dispatchRuns } from "../core/use-cases/dispatch-runs";
import { FUNCTION_TIMEOUT_SECONDS, TENANT_SHARE } from "../definitions/functions";
import { PUSH_QUEUE } from "../definitions/queues";

/** Kept from the function's remaining time for the handler's own end (its answer to the event source). */
const HANDLER_MARGIN_MS = 500;

/**
 * The dispatcher Lambda, fed by the push queue through an SQS event source mapping (decision
 * 0029): no function runs while nothing is due. The messages are the use case's to keep or
 * delete, as a worker's lease step does with a lane's: a record the use case deleted (its
 * run finished, dropped, or retried under a new message) is reported done, and the event
 * source deletes it; every other one (hidden until its lease lapses, held back, not yet due)
 * is reported as a batch item failure, so that the event source leaves it in the queue with
 * the visibility it was given.
 *
 * The use case is given the function's remaining time as its deadline (Lambda's context; the
 * function's timeout where there is none), so that it leases only what it can deliver and
 * record before the function is stopped. Each invocation takes part in its process's tenant
 * shares (decision 0039) until it ends: the runs of a tenant whose share of the process is
 * full go back to the queue.
 */
export function createDispatchHandler(
  deps: DispatchDeps & { readonly tenantShares?: TenantShares },
  pushQueueUrl: string,
) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const remainingMs = context?.getRemainingTimeInMillis() ?? FUNCTION_TIMEOUT_SECONDS.dispatcher * 1000;
    const deadline = deps.clock.now() + remainingMs - HANDLER_MARGIN_MS;
    const consumed = new Set<string>();
    const tenantShare = deps.tenantShares?.open();
    const tracked: DispatchDeps = {
      ...deps,
      queue: tracking(deps.queue, consumed),
      ...(tenantShare ? { tenantShare } : {}),
    };
    const received: ReceivedRunMessage[] = event.Records.map((record) => ({
      message: parseRunMessage(record.body),
      receiptHandle: handleOf(pushQueueUrl, record.receiptHandle),
      receiveCount: Number(record.attributes?.ApproximateReceiveCount ?? 0) || 0,
    }));
    try {
      const summary = await dispatchRuns(tracked, received, PUSH_QUEUE.visibilityTimeoutSeconds, deadline);
      if (summary.leased > 0) deps.log.info("push runs dispatched", { ...summary });
    } catch (error) {
      // A failure before any delivery (reading the jobs, the lease step; an outcome that could
      // not be written is the use case's to count, run by run): what was not finished comes
      // back, a leased run once its lease lapses, the rest after the visibility they were
      // received with.
      deps.log.error("dispatch failed", { error: String(error) });
    } finally {
      tenantShare?.close();
    }
    return {
      batchItemFailures: event.Records.filter(
        (record) => !consumed.has(handleOf(pushQueueUrl, record.receiptHandle)),
      ).map((record) => ({ itemIdentifier: record.messageId })),
    };
  };
}

/**
 * The run queue with its deletes left to the event source: a message the use case deletes is
 * only noted, and its record reported done, which the event source deletes (one request for
 * the batch instead of two). Should that delete fail, the message comes back to a lease step
 * that finds its run finished and drops it, as it would after a failed delete of our own.
 */
function tracking(queue: RunQueue, consumed: Set<string>): RunQueue {
  return new Proxy(queue, {
    get(target, property, receiver) {
      if (property === "delete") {
        return async (handle: string) => {
          consumed.add(handle);
        };
      }
      if (property === "deleteBatch") {
        return async (handles: readonly string[]) => {
          for (const handle of handles) consumed.add(handle);
          return [];
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The dispatcher's dependencies on the real adapters: targets reached with the tenants' roles. */
export function createDispatchDeps(
  base: ReturnType<typeof createSchedulerDeps>,
  reach: ConstructorParameters<typeof Targets>[1],
): DispatchDeps & { readonly tenantShares: TenantShares } {
  return {
    ...base,
    targets: new Targets(base.webhookSecrets, reach, destinationRulesOf(base.settings), {
      namePattern: base.settings.targetRoleNames,
      tenantAccounts: base.tenantAccounts,
    }),
    sleep: (ms) => new Promise((done) => setTimeout(done, ms)),
    targetSlots: new InProcessTargetSlots(),
    tenantShares: new InProcessTenantShares(TENANT_SHARE),
  };
}

let lazy: ReturnType<typeof createDispatchHandler> | undefined;

export const handler = (event: SQSEvent, context: Context) => {
  if (!lazy) {
    const config = configFromEnvironment();
    lazy = createDispatchHandler(
      createDispatchDeps(createSchedulerDeps(config), cloudReach(config.region)),
      config.pushQueueUrl,
    );
  }
  return lazy(event, context);
};
