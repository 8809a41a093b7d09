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
