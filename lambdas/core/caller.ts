/**
 * Who is calling. In AWS the HTTP edge derives both from the IAM principal that signed the
 * request; the core only compares tenants and records principals in the audit fields.
 */
export interface Caller {
  readonly tenant: string;
  readonly principal: string;
}

/**
 * A worker calling the lease protocol (/internal/*): its principal and the tenants its binding
 * lets it serve (one, or a pool's list). It sees only those tenants' runs; any other run is,
 * to it, a run that does not exist.
 */
export interface WorkerCaller {
  readonly principal: string;
  readonly tenants: readonly string[];
}

export function servesTenant(worker: WorkerCaller, tenant: string): boolean {
  return worker.tenants.includes(tenant);
}
