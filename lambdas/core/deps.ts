import type { SchedulerSettings } from "../definitions/settings";
import type { TenantAccounts } from "../definitions/target-role-config";
import type { Random } from "./backoff";
import type { Clock } from "./clock";
import type {
  JobStore,
  RateLimiter,
  RunQueue,
  RunStore,
  SweepQueue,
  TenantQuotas,
  WebhookSecretStore,
} from "./ports";

/** Structured logging as the core needs it; Powertools' Logger satisfies it. */
export interface Log {
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

/** Counts the handler publishes as metrics (EMF in AWS); absent where nothing publishes them. */
export interface Counters {
  count(name: "RunsLost", value: number): void;
}

/** Everything a use case may touch, passed in so tests can substitute any part. */
export interface SchedulerDeps {
  readonly jobs: JobStore;
  readonly runs: RunStore;
  readonly queue: RunQueue;
  readonly sweeps: SweepQueue;
  readonly clock: Clock;
  readonly settings: SchedulerSettings;
  /** Starts per tenant and second, when settings.tenantRunsPerSecond is set. */
  readonly rateLimiter: RateLimiter;
  /** Per-tenant quotas on creating jobs. */
  readonly quotas: TenantQuotas;
  /** Each tenant's webhook signing secret (push targets of kind https). */
  readonly webhookSecrets: WebhookSecretStore;
  /**
   * The accounts listed per tenant for Lambda and SQS target roles (TENANT_ACCOUNTS; decision
   * 0035); absent: none listed, so only tenants named by a principal's ARN have an account.
   */
  readonly tenantAccounts?: TenantAccounts | undefined;
  /** Jitter for retry backoff. */
  readonly random: Random;
  readonly log: Log;
  readonly counters?: Counters;
}
