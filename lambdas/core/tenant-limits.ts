import type { Clock } from "./clock";

/**
 * Per-tenant rate limit on starting runs. `take` grants up to `count` starts for `tenant` in
 * the second of `now` and returns how many it granted; the rest wait (they are never dropped).
 */
export interface RateLimiter {
  take(tenant: string, count: number, now: number): Promise<number>;
}

/** The per-tenant quotas a create counts against; each refusal names one. */
export type TenantQuota = "creates-per-second" | "active-jobs" | "job-types";

export type Admission =
  | { readonly admitted: true }
  | {
      readonly admitted: false;
      readonly quota: TenantQuota;
      readonly limit: number;
      /** When trying again may succeed. */
      readonly retryAfterSeconds: number;
    };

/**
 * Per-tenant quotas on creating jobs (settings: tenantCreatesPerSecond, tenantMaxActiveJobs,
 * tenantMaxJobTypes; 0 lifts one). Active jobs are counted up when created and recounted
 * from the jobs themselves when the count would refuse one, so a count can only err on the
 * strict side between recounts and never lets a tenant past its quota.
 */
export interface TenantQuotas {
  /**
   * Counts one create of a job of `type` by `tenant`, or says which quota refuses it. Takes the
   * clock, not an instant: a create is counted in the second it is admitted in, which may be
   * later than when it asked (it waited for another create's count).
   */
  admitCreate(tenant: string, type: string, clock: Pick<Clock, "now">): Promise<Admission>;
  /** Gives back an admitted create that stored nothing (its idempotency key's job existed). */
  releaseCreate(tenant: string): Promise<void>;
  /**
   * Gives a job type back to the tenant's types quota if none of its jobs of that type is
   * active or paused (called when the type's lane was deleted as idle). True if given back.
   */
  releaseType(tenant: string, type: string): Promise<boolean>;
  /**
   * A type the tenant has used, or a new one counted in its types quota: a listening worker's
   * type makes a lane as a job's would (decision 0049).
   */
  admitType(tenant: string, type: string): Promise<Admission>;
}
