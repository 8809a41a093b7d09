import type { TenantShare, TenantShares } from "../../core/tenant-shares";

/**
 * Tenant shares counted in this process (core/tenant-shares.ts): per tenant, the dispatches
 * that hold its runs, each at most `perTenant`.
 */
export class InProcessTenantShares implements TenantShares {
  private readonly holding = new Map<string, number>();

  constructor(private readonly perTenant: number) {}

  /** Dispatches that hold the tenant's runs now. */
  dispatchesOf(tenant: string): number {
    return this.holding.get(tenant) ?? 0;
  }

  open(): TenantShare {
    const held = new Set<string>();
    let closed = false;
    return {
      admits: (tenant) => {
        if (closed) return false;
        if (held.has(tenant)) return true;
        if (this.dispatchesOf(tenant) >= this.perTenant) return false;
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
}
