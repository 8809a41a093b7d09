import type { RunSeed } from "../../core/run";

/** The condition and update fragments the run store's writes share (decision 0037's guards). */
export const STATUS = { "#status": "status" };
/** A run that exists and is pending, or whose lease has lapsed. */
export const UNSTARTED_OR_LAPSED =
  "attribute_exists(pk) AND (#status = :pending OR (#status = :leased AND leaseExpiresAt <= :now))";
/**
 * Leasable when the lease would start: every run row keeps `availableAt` (when a pending run
 * may start: its scheduled instant or its retry's; for a leased run, its lease's end), so one
 * comparison covers a new run, a retry that is due, and a lapsed lease. (A single comparison is
 * also what dynalite evaluates fastest: 2.5x the leases per second of the nested form.)
 */
export const LEASABLE = "availableAt <= :starts AND (#status = :pending OR #status = :leased)";
/** Whether a run is its job's last, in a condition (:true bound to true; FINAL's name). */
export function finalIs(final: boolean): string {
  return final ? "#final = :true" : "(attribute_not_exists(#final) OR #final <> :true)";
}
/** `final` is one of DynamoDB's reserved words. */
export const FINAL = { "#final": "final" };
/**
 * What a finishing run's update removes: its message's receipt handle and its retry time, and
 * its repair-index keys unless it is its job's last run (kept until its job is marked).
 */
export function leavingOnFinish(final: boolean): string {
  return `${final ? "" : "repairKey, checkAt, "}receiptHandle, retryAt`;
}
/** A leased run whose lease is held with :fence. */
export const HELD = "fence = :fence AND #status = :leased";

/**
 * The first write of a run made but not written (decision 0051): the guard holds for an item
 * not there yet, and the SET clause writes, only where missing, the fields the seed carries
 * (with attempt and fence 0 unless the update ADDs them), but `final` wherever the seed is
 * marked last. With no seed, nothing: the item must exist, as before.
 */
export function seededWrite(
  seed: RunSeed | undefined,
  guard: string,
  counters: "set" | "added",
): { condition: string; set: string; names: Record<string, string>; values: Record<string, unknown> } {
  if (!seed) return { condition: guard, set: "", names: {}, values: {} };
  const fields = [
    "runId = if_not_exists(runId, :seedRunId)",
    "jobId = if_not_exists(jobId, :seedJobId)",
    "tenant = if_not_exists(tenant, :seedTenant)",
    "#type = if_not_exists(#type, :seedType)",
    "scheduledFor = if_not_exists(scheduledFor, :seedScheduledFor)",
    "createdAt = if_not_exists(createdAt, :seedCreatedAt)",
    // A seed marked last makes a written run last too (decision 0046's addendum): the events
    // that take a seed other than a lease ask for the `final` the seed has.
    ...(seed.final ? ["#final = :seedFinal"] : []),
    ...(counters === "set"
      ? ["attempt = if_not_exists(attempt, :seedZero)", "fence = if_not_exists(fence, :seedZero)"]
      : []),
  ];
  return {
    condition: `attribute_not_exists(pk) OR (${guard})`,
    set: `, ${fields.join(", ")}`,
    names: { "#type": "type", ...(seed.final ? FINAL : {}) },
    values: {
      ":seedRunId": seed.runId,
      ":seedJobId": seed.jobId,
      ":seedTenant": seed.tenant,
      ":seedType": seed.type,
      ":seedScheduledFor": seed.scheduledFor,
      ":seedCreatedAt": seed.createdAt,
      ...(seed.final ? { ":seedFinal": true } : {}),
      ...(counters === "set" ? { ":seedZero": 0 } : {}),
    },
  };
}
