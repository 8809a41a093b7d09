import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * One local runtime per data folder (LevelDB allows one process). A pid file says who holds
 * it; a pid that is no longer alive (a runtime killed with SIGKILL) does not count.
 */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * `unclean` says the previous runtime on this folder did not stop cleanly (its pid file is
 * still there): killed, crashed, or the machine lost power.
 */
export function lockDataDir(dataDir: string): { release(): void; readonly unclean: boolean } {
  const file = join(dataDir, "runtime.pid");
  let holder: number | undefined;
  try {
    holder = Number(readFileSync(file, "utf8").trim());
  } catch {
    holder = undefined;
  }
  if (holder && holder !== process.pid && isAlive(holder)) {
    throw new Error(
      `jobsched (pid ${holder}) is already running on ${dataDir}; stop it or set JOBSCHED_DATA_DIR`,
    );
  }
  writeFileSync(file, String(process.pid));
  return { release: () => rmSync(file, { force: true }), unclean: holder !== undefined };
}
