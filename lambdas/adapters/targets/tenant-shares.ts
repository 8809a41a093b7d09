import type { TenantShare, TenantShares } from "../../core/tenant-shares";

/** What one tenant may hold in a process: runs, and dispatches holding them. */
export interface ShareLimits {
  readonly runs: number;
  /** Dispatches, while no other tenant holds runs in the process. */
  readonly dispatches: number;
  /**
   * Dispatches, while another tenant holds runs here (default `dispatches`): the others' runs
   * may come a few to a dispatch (a batch of the flood's with theirs in it, the flood's given
   * back), each dispatch held until its runs' second, so they need more room than their count.
   */
  readonly dispatchesBeside?: number;
}

/**
 * Tenant shares counted in this process (core/tenant-shares.ts): per tenant, the runs its open
 * dispatches leased and the dispatches that hold them, each within `limits`.
 */
export class InProcessTenantShares implements TenantShares {
  private readonly holding = new Map<string, { runs: number; dispatches: number }>();

  constructor(private readonly limits: ShareLimits) {}

  /** What the tenant holds now. */
  heldBy(tenant: string): { runs: number; dispatches: number } {
    return this.holding.get(tenant) ?? { runs: 0, dispatches: 0 };
  }

  open(): TenantShare {
    const mine = new Map<string, number>();
    let closed = false;
    const full = (tenant: string) => {
      const held = this.heldBy(tenant);
      const others = [...this.holding.keys()].some((t) => t !== tenant);
      const dispatches = others
        ? (this.limits.dispatchesBeside ?? this.limits.dispatches)
        : this.limits.dispatches;
      return closed || held.runs >= this.limits.runs || (!mine.has(tenant) && held.dispatches >= dispatches);
    };
    return {
      full,
      admits: (tenant) => {
        if (full(tenant)) return false;
        const held = this.heldBy(tenant);
        this.holding.set(tenant, {
          runs: held.runs + 1,
          dispatches: held.dispatches + (mine.has(tenant) ? 0 : 1),
        });
        mine.set(tenant, (mine.get(tenant) ?? 0) + 1);
        return true;
      },
      close: () => {
        if (closed) return;
        closed = true;
        for (const [tenant, runs] of mine) {
          const held = this.heldBy(tenant);
          const left = { runs: held.runs - runs, dispatches: held.dispatches - 1 };
          if (left.dispatches > 0) this.holding.set(tenant, left);
          else this.holding.delete(tenant);
        }
      },
    };
  }
}
