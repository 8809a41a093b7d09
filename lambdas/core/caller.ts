/**
 * Who is calling. In AWS the HTTP edge derives both from the IAM principal that signed the
 * request; the core only compares tenants and records principals in the audit fields.
 */
export interface Caller {
  readonly tenant: string;
  readonly principal: string;
}
