/** dynalite ships no types; this is the part of its API jobsched uses. */
declare module "dynalite" {
  import type { Server } from "node:http";

  interface DynaliteOptions {
    /** LevelDB folder; in memory when omitted. */
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
  }

  function dynalite(options?: DynaliteOptions): Server;
  export default dynalite;
}
