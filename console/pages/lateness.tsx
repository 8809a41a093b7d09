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
      plot = new uPlot(
        {
          width: Math.min(900, chart.current.clientWidth || 340),
          height: 260,
          series: [{}, { label: "p50 (ms)", stroke: "#2a6" }, { label: "p99 (ms)", stroke: "#c33" }],
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
      <p role="status">{summary}</p>
      <div ref={chart} role="img" aria-label="Start lateness p50 and p99 per minute" />
    </section>
  );
}
