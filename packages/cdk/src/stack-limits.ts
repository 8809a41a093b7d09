import { RetentionDays } from "aws-cdk-lib/aws-logs";

/**
 * The stack's guards against floods and unbounded cost (issue 15), each settable in CDK context:
 *
 * - `jobsched:logRetentionDays` (90): how long the functions' and the API's logs are kept; one of
 *   the values CloudWatch Logs offers (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, ...).
 * - `jobsched:apiRateLimit` / `jobsched:apiBurstLimit` (2,000 / 4,000 requests a second): the
 *   HTTP API stage's throttle, under the account's 10,000 / 5,000 so that one stack cannot use up
 *   what the account's other APIs share. Past it API Gateway answers 429; the worker SDK retries.
 * - `jobsched:reservedConcurrency` ({"tick": 2, "sweeper": 32, "internal": 300}; 0 for none):
 *   capacity kept for the functions that keep runs moving (the tick, the sweeper, the worker
 *   protocol), so that a flood of tenant API calls cannot throttle them. A reservation is also a
 *   ceiling: the sweeper's matches its event source's 32, the worker protocol's is about 1.5
 *   times what docs/CAPACITY.md's million-run spike needs. Lambda keeps 100 of the account's
 *   concurrency unreserved: an account still at a low default quota must lower these (or set
 *   them to 0) to deploy.
 */
export interface StackLimits {
  readonly logRetentionDays: number;
  readonly apiRateLimit: number;
  readonly apiBurstLimit: number;
  readonly reservedConcurrency: {
    readonly tick: number;
    readonly sweeper: number;
    readonly internal: number;
  };
}

export const DEFAULT_STACK_LIMITS: StackLimits = {
  logRetentionDays: 90,
  apiRateLimit: 2_000,
  apiBurstLimit: 4_000,
  reservedConcurrency: { tick: 2, sweeper: 32, internal: 300 },
};

const RETENTION_VALUES = new Set<number>(
  Object.values(RetentionDays).filter((v): v is number => typeof v === "number"),
);

/** How an error names a limit: the context key for the app's context, `limits.<name>` for the construct's props. */
export type LimitName = (name: string) => string;
const contextKey: LimitName = (name) => `context jobsched:${name}`;

/**
 * The limits from CDK context values (as `tryGetContext` returns them: numbers, strings, or an
 * object or its JSON text for `reservedConcurrency`), defaults for what is not set. Anything
 * malformed stops the synth with the setting's name.
 */
export function stackLimitsFrom(
  context: (name: string) => unknown,
  nameOf: LimitName = contextKey,
): StackLimits {
  const wholeNumber = (name: string, value: unknown, min: number): number => {
    const number = typeof value === "string" ? Number(value) : value;
    if (typeof number !== "number" || !Number.isInteger(number) || number < min) {
      throw new Error(`${nameOf(name)}: must be a whole number of at least ${min}`);
    }
    return number;
  };
  const limits: Mutable<StackLimits> = { ...DEFAULT_STACK_LIMITS };
  const reservedConcurrency: Mutable<StackLimits["reservedConcurrency"]> = {
    ...DEFAULT_STACK_LIMITS.reservedConcurrency,
  };
  const retention = context("logRetentionDays");
  if (retention !== undefined) {
    const days = wholeNumber("logRetentionDays", retention, 1);
    if (!RETENTION_VALUES.has(days)) {
      throw new Error(
        `${nameOf("logRetentionDays")}: CloudWatch Logs keeps logs for one of ${[...RETENTION_VALUES].sort((a, b) => a - b).join(", ")} days`,
      );
    }
    limits.logRetentionDays = days;
  }
  const rate = context("apiRateLimit");
  if (rate !== undefined) limits.apiRateLimit = wholeNumber("apiRateLimit", rate, 1);
  const burst = context("apiBurstLimit");
  if (burst !== undefined) limits.apiBurstLimit = wholeNumber("apiBurstLimit", burst, 1);
  const reserved = context("reservedConcurrency");
  if (reserved !== undefined) {
    let value: unknown = reserved;
    if (typeof reserved === "string") {
      try {
        value = JSON.parse(reserved);
      } catch {
        throw new Error(
          `${nameOf("reservedConcurrency")}: must be an object like {"tick":2,"sweeper":32,"internal":300}`,
        );
      }
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new Error(
        `${nameOf("reservedConcurrency")}: must be an object like {"tick":2,"sweeper":32,"internal":300}`,
      );
    }
    for (const [name, count] of Object.entries(value)) {
      if (!(name in reservedConcurrency)) {
        throw new Error(
          `${nameOf("reservedConcurrency")}: unknown function "${name}" (tick, sweeper, internal)`,
        );
      }
      reservedConcurrency[name as keyof typeof reservedConcurrency] = wholeNumber(
        `reservedConcurrency.${name}`,
        count,
        0,
      );
    }
  }
  return { ...limits, reservedConcurrency };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
