import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { client, messageOf } from "../api";
import { latenessByMinute } from "../lateness";

/**
 * Start lateness over time, p50 and p99 a minute, from the run history of the most recent jobs
 * (up to 25 jobs, their latest 100 runs each): whether runs start on time, at a glance.
 */
export function LatenessPage() {
  const chart = useRef<HTMLDivElement>(null);
  const [summary, setSummary] = useState("Loading...");

  useEffect(() => {
    let plot: uPlot | undefined;
    (async () => {
      const { jobs } = await client.listJobs({ limit: 25 });
      const pages = await Promise.all(jobs.map((job) => client.listRuns(job.jobId, { limit: 100 })));
      const series = latenessByMinute(pages.flatMap((page) => page.runs));
      setSummary(
        series.minutes.length === 0
          ? "No started runs yet."
          : `${series.minutes.length} minute(s); latest p50 ${series.p50.at(-1)} ms, p99 ${series.p99.at(-1)} ms`,
      );
      if (!chart.current || series.minutes.length === 0) return;
      // The axes and lines in the page's colours, light or dark (uPlot draws on a canvas).
      const colour = (name: string) =>
        getComputedStyle(document.documentElement).getPropertyValue(name).trim();
      const axis = {
        stroke: colour("--muted"),
        grid: { stroke: colour("--border") },
        ticks: { stroke: colour("--border") },
      };
      plot = new uPlot(
        {
          width: Math.min(1100, chart.current.clientWidth || 320),
          height: 260,
          axes: [
            // Hours and minutes in UTC, a label every 70 px at least (uPlot's default puts a
            // date and a time on two lines, which overlap their neighbours on a short range).
            {
              ...axis,
              space: 70,
              values: (_plot, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(11, 16)),
              label: "UTC",
            },
            axis,
          ],
          // The history's own span, a few minutes either side when short (uPlot would range a
          // single point over years).
          scales: { x: { time: true, auto: false, range: xRangeOf(series.minutes) } },
          // In UTC, as every other instant on the console, not the browser's zone.
          tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
          series: [
            {},
            { label: "p50 (ms)", stroke: colour("--ok"), width: 2 },
            { label: "p99 (ms)", stroke: colour("--bad"), width: 2 },
          ],
        },
        [series.minutes, series.p50, series.p99],
        chart.current,
      );
    })().catch((e: unknown) => setSummary(messageOf(e)));
    return () => plot?.destroy();
  }, []);
  return (
    <section aria-labelledby="lateness-title">
      <h1 id="lateness-title">Start lateness</h1>
      <p role="status" class="message">
        {summary}
      </p>
      <div class="card">
        <div ref={chart} role="img" aria-label="Start lateness p50 and p99 per minute" />
      </div>
    </section>
  );
}

/** The x axis's range, epoch seconds: the minutes shown, padded to at least ten minutes. */
function xRangeOf(minutes: readonly number[]): uPlot.Range.MinMax {
  const first = minutes[0] ?? 0;
  const last = minutes.at(-1) ?? first;
  const pad = Math.max(0, 600 - (last - first)) / 2;
  return [first - pad, last + pad];
}
