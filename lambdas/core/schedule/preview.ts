import { MAX_PREVIEW_COUNT, type Preview, type PreviewRun, previewQuery } from "@jobsched/contract";
import { isoDuration } from "../duration";
import { ValidationError } from "../errors";
import { formatInstant, parseInstant } from "../instant";
import { parseWith } from "../validation";
import { firingsAfter, type Schedule } from "./schedule";
import { DEFAULT_TIME_ZONE, scheduleFromFields } from "./schedule-input";
import { formatLocal, formatNaive } from "./zone-time";

/**
 * The next N run instants of a schedule, in UTC and local time, each marked where DST moved
 * it (its local time did not exist), merged it (several local times ran as one) or where its
 * local time happens twice (it ran at the first). Served by GET /api/v1/schedules/preview and
 * by `jobsched preview`, which works offline: both print exactly this. With a jitter window
 * and the job's id, each run is shown at its jittered instant with the firing it stands for.
 */

export type { Preview, PreviewRun };
export { MAX_PREVIEW_COUNT, previewQuery };

export function previewSchedule(query: unknown, now: number): Preview {
  const q = parseWith(previewQuery, query, "query");
  const schedule = scheduleFromFields({
    ...q,
    every: q.interval,
    everyField: "interval",
    jitterSeed: q.jobId,
  });
  const from = q.from === undefined ? now : parseInstant(q.from);
  if (from === undefined) throw new ValidationError("from: not an ISO 8601 instant", "from");
  const timeZone = q.timeZone ?? DEFAULT_TIME_ZONE;

  return { timeZone, from: formatInstant(from), runs: previewRuns(schedule, timeZone, from, q.count) };
}

/** The first `count` runs of a schedule at or after `from`, marked as the preview marks them. */
export function previewRuns(schedule: Schedule, timeZone: string, from: number, count: number): PreviewRun[] {
  const runs: PreviewRun[] = [];
  // `from` itself counts: preview what runs at or after it.
  for (const firing of firingsAfter(schedule, from - 1)) {
    if (runs.length >= count) break;
    const run: PreviewRun = {
      at: formatInstant(firing.at),
      local: formatLocal(timeZone, firing.at),
      ...(firing.jittered
        ? {
            firing: formatInstant(firing.jittered.firingAt),
            jitter: isoDuration(firing.jittered.offsetMs),
          }
        : {}),
    };
    if (!firing.dst) {
      runs.push(run);
      continue;
    }
    const { kind, nominal, skipped } = firing.dst;
    const dst = nominal.length > 1 ? "merged" : kind;
    runs.push({
      ...run,
      ...(dst === "exact" ? {} : { dst }),
      ...(dst === "moved" || dst === "merged" ? { scheduledLocal: nominal.map(formatNaive) } : {}),
      ...(skipped ? { skippedLocal: skipped.map(formatNaive) } : {}),
    });
  }
  return runs;
}
