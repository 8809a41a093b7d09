import { appendFileSync } from "node:fs";
import { z } from "zod";
import type { AwsFaultEvent, AwsFaultSettings } from "./aws-faults";

/**
 * The local runtime's fault injection settings, from its environment (decision 0038):
 *
 * - JOBSCHED_FAULT_RATE: the share of DynamoDB and SQS requests that fail, 0-0.5 (0.02 is one
 *   in fifty). Unset or 0: none, as always in AWS.
 * - JOBSCHED_FAULT_TIMEOUT_MS: how long a request that never answers hangs before its timeout
 *   error (default 2000).
 * - JOBSCHED_FAULT_LOG: a file that gets one JSON line per injected fault (and a tally of
 *   requests), appended synchronously so that a SIGKILL loses none: the crash loop's books read it.
 */
const environmentSchema = z.object({
  JOBSCHED_FAULT_RATE: z.coerce.number().min(0).max(0.5).default(0),
  JOBSCHED_FAULT_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(2_000),
  JOBSCHED_FAULT_LOG: z.string().min(1).optional(),
});

/** The settings, or undefined when no fault is asked for; throws naming the variable that is wrong. */
export function awsFaultsFromEnvironment(env: NodeJS.ProcessEnv): AwsFaultSettings | undefined {
  const parsed = environmentSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`fault injection is misconfigured: ${problems}`);
  }
  const {
    JOBSCHED_FAULT_RATE: rate,
    JOBSCHED_FAULT_TIMEOUT_MS: timeoutMs,
    JOBSCHED_FAULT_LOG: log,
  } = parsed.data;
  if (rate === 0) return undefined;
  return {
    rate,
    timeoutMs,
    ...(log ? { record: (event: AwsFaultEvent) => appendFileSync(log, `${JSON.stringify(event)}\n`) } : {}),
  };
}
