import type { JobStore } from "../../lambdas/core/ports";

/** Records the name of each call to the job store's `names` from now on (writes a test expects none of). */
export function watchJobWrites(jobs: JobStore, names: ReadonlyArray<keyof JobStore>): string[] {
  const writes: string[] = [];
  for (const name of names) {
    const write = (jobs[name] as (...args: unknown[]) => Promise<unknown>).bind(jobs);
    Object.assign(jobs, {
      [name]: (...args: unknown[]) => {
        writes.push(name);
        return write(...args);
      },
    });
  }
  return writes;
}
