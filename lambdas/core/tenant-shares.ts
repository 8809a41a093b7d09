/**
 * Each tenant's share of one dispatcher process (decision 0037): how many of the dispatches
 * (event source invocations) it runs at once may hold a tenant's runs. A dispatch holds every
 * run it leased until the run is delivered, its slow deliveries and its runs held until their
 * second included; were one tenant's runs in all of them, another tenant's run, however quiet
 * its tenant, would wait for one to end. A tenant alone may use all of them but a few (a spike
 * of its own fills the dispatches thinly, a few runs each), which keep receiving so that a
 * newcomer's runs are met; once another tenant's runs have come lately, it keeps to its share.
 * In AWS a process runs one dispatch at a time, so this never refuses there; locally one
 * process runs every dispatch of the event source at once.
 */
export interface TenantShares {
  /** A dispatch's part in the shares, for the runs it leases; closed when the dispatch ends. */
  open(): TenantShare;
}

export interface TenantShare {
  /** A run of `tenant` came to this dispatch: the tenant counts as present (seen lately). */
  notice(tenant: string): void;
  /**
   * Whether this dispatch may lease a run of `tenant` (which counts as seen): yes if it holds
   * the tenant's runs already, or if fewer of the process's dispatches than the tenant's share
   * hold them (this dispatch then counts); the share is larger while no other tenant's runs
   * have come lately.
   */
  admits(tenant: string): boolean;
  /** The dispatch ended: it no longer holds its tenants' runs. */
  close(): void;
}
