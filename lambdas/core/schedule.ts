import type { Schedule } from "./job";

/**
 * The first instant a schedule fires, or undefined if it never will. A one-off job whose time
 * has just passed still fires once; how far in the past is acceptable is the API's decision.
 */
export function firstRunAt(schedule: Schedule): number | undefined {
  switch (schedule.kind) {
    case "once":
      return schedule.runAt;
  }
}

/** The instant after `after` that needs a run, once the run for `after` exists. */
export function nextRunAfter(schedule: Schedule, _after: number): number | undefined {
  switch (schedule.kind) {
    case "once":
      return undefined;
  }
}
