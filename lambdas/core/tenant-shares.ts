/**
 * Each tenant's share of one dispatcher process (decision 0039). A dispatch (an event source
 * invocation) holds every run it leased until the run is delivered, its runs held until their
 * second and its slow deliveries included; were one tenant's runs in all of them, another
 * tenant's run, however quiet its tenant, would wait for one to end. So one tenant may hold at
 * most so many runs in a process (a flood fills its dispatches ten to a batch) and so many of
 * its dispatches (a spike of its own fills them thinly, a few runs each), short of all of
 * them: the rest keep receiving, and a fair queue hands them the other tenants' runs first.
 * In AWS a process runs one dispatch at a time, so this never refuses there; locally one
 * process runs every dispatch of the event source at once.
 */
export interface TenantShares {
  /** A dispatch's part in the shares, for the runs it leases; closed when the dispatch ends. */
  open(): TenantShare;
}

export interface TenantShare {
  /** Whether the tenant's share is full for this dispatch: a run of it would be refused. */
  full(tenant: string): boolean;
  /** Counts a run of `tenant` into this dispatch if the tenant's share has room; false if not. */
  admits(tenant: string): boolean;
  /** The dispatch ended: its runs no longer count. */
  close(): void;
}
