import type { TenantShare, TenantShares } from "../../core/tenant-shares";

/** How long a tenant whose runs came counts as present: the others keep to their shares meanwhile. */
export const TENANT_SEEN_WINDOW_MS = 60_000;

/**
 * Tenant shares counted in this process (core/tenant-shares.ts): per tenant, the dispatches
 * that hold its runs, at most `shares.perTenant` while another tenant has been seen within
 * TENANT_SEEN_WINDOW_MS, and at most `shares.alone` otherwise.
 */
export class InProcessTenantShares implements TenantShares {
  private readonly holding = new Map<string, number>();
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly shares: {
      /** A tenant's share while another is present. */
      readonly perTenant: number;
      /** A tenant's share alone: all but the few dispatches that keep receiving for newcomers. */
      readonly alone: number;
    },
    private readonly now: () => number = Date.now,
  ) {}

  /** Dispatches that hold the tenant's runs now. */
  dispatchesOf(tenant: string): number {
    return this.holding.get(tenant) ?? 0;
  }

  open(): TenantShare {
    const held = new Set<string>();
    let closed = false;
    return {
      notice: (tenant) => this.see(tenant),
      admits: (tenant) => {
        if (closed) return false;
        this.see(tenant);
        if (held.has(tenant)) return true;
        const share = this.othersPresent(tenant) ? this.shares.perTenant : this.shares.alone;
        if (this.dispatchesOf(tenant) >= share) return false;
        this.holding.set(tenant, this.dispatchesOf(tenant) + 1);
        held.add(tenant);
        return true;
      },
      close: () => {
        if (closed) return;
        closed = true;
        for (const tenant of held) {
          const left = this.dispatchesOf(tenant) - 1;
          if (left > 0) this.holding.set(tenant, left);
          else this.holding.delete(tenant);
        }
      },
    };
  }

  private see(tenant: string): void {
    const now = this.now();
    this.seen.set(tenant, now);
    // Tenants not seen for the window are forgotten, so that the map stays as small as the
    // tenants the process serves at a time.
    if (this.seen.size > 1_000) {
      for (const [other, at] of this.seen) if (now - at > TENANT_SEEN_WINDOW_MS) this.seen.delete(other);
    }
  }

  /** Whether another tenant holds dispatches, or had runs come within the window. */
  private othersPresent(tenant: string): boolean {
    const now = this.now();
    for (const [other, at] of this.seen) {
      if (other !== tenant && (now - at <= TENANT_SEEN_WINDOW_MS || this.dispatchesOf(other) > 0))
        return true;
    }
    return false;
  }
}
