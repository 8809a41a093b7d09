/**
 * Each tenant's share of one dispatcher process (decision 0037): how many of the dispatches
 * (event source invocations) it runs at once may hold a tenant's runs. A dispatch holds every
 * run it leased until the run is delivered, its slow deliveries and its runs held until their
 * second included; were one tenant's runs in all of them, another tenant's run, however quiet
 * its tenant, would wait for one to end. In AWS a process runs one dispatch at a time, so this
 * never refuses there; locally one process runs every dispatch of the event source at once.
 */
export interface TenantShares {
  /** A dispatch's part in the shares, for the runs it leases; closed when the dispatch ends. */
  open(): TenantShare;
}

export interface TenantShare {
  /**
   * Whether this dispatch may lease a run of `tenant`: yes if it holds the tenant's runs
   * already, or if fewer of the process's dispatches than the tenant's share hold them (this
   * one then counts).
   */
  admits(tenant: string): boolean;
  /** The dispatch ended: it no longer holds its tenants' runs. */
  close(): void;
}
