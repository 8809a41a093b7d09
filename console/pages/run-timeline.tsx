import type { RunResponse } from "@jobsched/contract";
import { type AttemptLine, clockText, durationText, runTimeline } from "../run-timeline";

/** A job's runs, newest first, each as a bar and its attempts in order (see run-timeline.ts). */
export function RunTimelineList({
  runs,
  now,
}: {
  readonly runs: readonly RunResponse[];
  readonly now: number;
}) {
  if (runs.length === 0) return <p class="muted">No runs yet.</p>;
  return (
    <ol class="timeline" aria-label="Runs">
      {runs.map((run) => (
        <RunEntry key={run.runId} run={run} now={now} />
      ))}
    </ol>
  );
}

/** Where a piece of the bar starts: never so far right that its least width leaves the bar. */
const left = (at: number) => `min(${at * 100}%, calc(100% - 3px))`;

function RunEntry({ run, now }: { readonly run: RunResponse; readonly now: number }) {
  const timeline = runTimeline(run, now);
  return (
    <li class="run" data-run-key={run.runKey}>
      <div class="run-head">
        <time class="mono" dateTime={run.scheduledFor}>
          {run.scheduledFor}
        </time>
        <span class={`badge status-${run.status}`}>{run.status}</span>
        {run.origin && <span class="tag">{run.origin}</span>}
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
            style={{ left: left(segment.from), width: `${(segment.to - segment.from) * 100}%` }}
          />
        ))}
        {timeline.retry && <span class="marker" style={{ left: left(timeline.retry.at) }} />}
      </div>
      {timeline.span > 0 && (
        <div class="scale muted" aria-hidden="true">
          <span>scheduled</span>
          <span>+{durationText(timeline.span)}</span>
        </div>
      )}
      <ol class="attempts">
        {timeline.lines.map((line) => (
          <AttemptItem key={`${line.attempt}-${line.startedAt}`} line={line} />
        ))}
        {timeline.unlistedFences && (
          <li class="muted unlisted">
            Not listed: the lease(s) with fence {timeline.unlistedFences}. A lease that lapsed or was given
            back, the attempt that ended a round before a replay, and failures beyond the last 10 are not
            recorded.
          </li>
        )}
        {run.replays !== undefined && (
          <li class="muted">
            Replayed {run.replays} time(s)
            {run.replayedAt ? `, last at ${run.replayedAt}` : ""}
            {run.replayedBy ? ` by ${run.replayedBy}` : ""}.
          </li>
        )}
        {timeline.retry && (
          <li class="muted">
            Retry waits until +{durationText(timeline.retry.after)} after its scheduled time.
          </li>
        )}
        {timeline.ending && (
          <li>
            <span class={`badge status-${timeline.ending.status}`}>{timeline.ending.status}</span>
            {timeline.ending.reason && (
              <>
                : <bdi>{timeline.ending.reason}</bdi>
              </>
            )}
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
  const fence =
    line.fence === undefined
      ? `fence ${line.runFence - 1} or ${line.runFence}: a cancel that revokes a lease raises its fence`
      : `fence ${line.fence}`;
  const start =
    line.startedAt === undefined || line.startedAfter === undefined ? (
      "start not recorded"
    ) : (
      <>
        started{" "}
        <time class="mono" dateTime={new Date(line.startedAt).toISOString()}>
          {clockText(line.startedAt)}
        </time>{" "}
        (+{durationText(line.startedAfter)})
      </>
    );
  return (
    <li class="attempt" data-outcome={line.outcome}>
      <strong>Attempt {line.attempt}</strong> <span class="muted">({fence})</span>: {start},{" "}
      <span class={`badge status-${line.outcome}`}>{outcomeText(line)}</span>
      {line.error && (
        <span class="attempt-error">
          : <bdi>{line.error}</bdi>
        </span>
      )}
    </li>
  );
}

/**
 * How an attempt ended and how long it took. A lease is handed over up to about 26 s before the
 * instant it starts the run; a worker that reports before that instant did not hold it as the
 * lease asks, and the line says so rather than print a negative duration.
 */
function outcomeText(line: AttemptLine): string {
  if (line.outcome === "running")
    return line.leaseUntil === undefined ? "running" : `running, lease until ${clockText(line.leaseUntil)}`;
  const { took } = line;
  const verb = line.outcome === "lapsed" ? "lease lapsed" : line.outcome;
  if (took === undefined) return verb;
  return took < 0
    ? `${verb} ${durationText(-took)} before its start instant`
    : `${verb} after ${durationText(took)}`;
}
