import type { RunResponse } from "@jobsched/contract";
import { type AttemptLine, durationText, runTimeline } from "../run-timeline";

/** A job's runs, newest first, each as a bar and its attempts in order (see run-timeline.ts). */
export function RunTimelineList({ runs }: { readonly runs: readonly RunResponse[] }) {
  if (runs.length === 0) return <p class="muted">No runs yet.</p>;
  return (
    <ol class="timeline" aria-label="Runs">
      {runs.map((run) => (
        <RunEntry key={run.runId} run={run} />
      ))}
    </ol>
  );
}

function RunEntry({ run }: { readonly run: RunResponse }) {
  const timeline = runTimeline(run);
  return (
    <li class="run" data-run-key={run.runKey}>
      <div class="run-head">
        <time class="mono" dateTime={run.scheduledFor}>
          {run.scheduledFor}
        </time>
        <span class={`badge status-${run.status}`}>{run.status}</span>
        {run.origin && <span class="tag">{run.origin}</span>}
        {run.replays === undefined ? null : <span class="tag">replayed</span>}
        <span class="muted">
          attempt {run.attempt} · fence {run.fence}
        </span>
      </div>
      <div class="track" aria-hidden="true">
        {timeline.segments.map((segment, i) => (
          <span
            // The bar's pieces never move once drawn: their order is their identity.
            key={i}
            class={`segment segment-${segment.kind}`}
            style={{ left: `${segment.from * 100}%`, width: `${(segment.to - segment.from) * 100}%` }}
          />
        ))}
        {timeline.retry && (
          <span class="marker" style={{ left: `calc(${timeline.retry.at * 100}% - 2px)` }} />
        )}
      </div>
      {timeline.span > 0 && (
        <div class="scale muted" aria-hidden="true">
          <span>scheduled</span>
          <span>+{durationText(timeline.span)}</span>
        </div>
      )}
      <ol class="attempts">
        {timeline.unlisted > 0 && (
          <li class="muted">
            {timeline.unlisted} earlier attempt(s) not listed: a lease that lapsed (a worker that stopped
            answering) is not recorded, and only the last 10 failures are kept.
          </li>
        )}
        {timeline.lines.map((line) => (
          <AttemptItem key={line.fence} line={line} />
        ))}
        {timeline.retry && (
          <li class="muted">
            Retry waits until +{durationText(timeline.retry.after)} after its scheduled time.
          </li>
        )}
        {timeline.ending && (
          <li>
            {timeline.ending.status}
            {timeline.ending.reason ? `: ${timeline.ending.reason}` : ""}
          </li>
        )}
        {run.status === "pending" && !timeline.retry && <li class="muted">Not started.</li>}
        {run.missedCount !== undefined && (
          <li class="muted">
            Stands for {run.missedCount} missed firing(s), through {run.missedThrough}.
          </li>
        )}
      </ol>
    </li>
  );
}

function AttemptItem({ line }: { readonly line: AttemptLine }) {
  const start =
    line.startedAfter === undefined ? "start not recorded" : `started +${durationText(line.startedAfter)}`;
  const end = line.outcome === "running" ? "running" : `${line.outcome}${tookText(line.took)}`;
  return (
    <li class="attempt" data-outcome={line.outcome}>
      <strong>Attempt {line.attempt}</strong> <span class="muted">(fence {line.fence})</span>: {start},{" "}
      <span class={`badge status-${line.outcome}`}>{end}</span>
      {line.error && <span class="attempt-error">: {line.error}</span>}
    </li>
  );
}

/**
 * How long an attempt took. A lease is handed over up to about 26 s before the instant it starts
 * the run; a worker that reports before that instant did not hold it as the lease asks, and the
 * timeline says so rather than print a negative duration.
 */
function tookText(took: number | undefined): string {
  if (took === undefined) return "";
  return took < 0 ? ` ${durationText(-took)} before its start instant` : ` after ${durationText(took)}`;
}
