import { JOB_RECENT_RUNS, type JobResponse, type Preview, type RunResponse } from "@jobsched/contract";
import { useCallback, useEffect, useState } from "preact/hooks";
import { client, messageOf } from "../api";
import { scheduleText } from "./jobs";
import { LabelsCard } from "./labels";
import { RunTimelineList } from "./run-timeline";
import { TargetFacts } from "./target";

const RUNS_PAGE = 20;

/**
 * A job: its schedule and where its runs go, labels (editable), the next runs with DST marks,
 * its runs as a timeline (paged), the audit trail, and its actions.
 */
export function JobPage({ jobId }: { readonly jobId: string }) {
  const [job, setJob] = useState<JobResponse | undefined>();
  const [preview, setPreview] = useState<Preview | undefined>();
  const [runs, setRuns] = useState<RunResponse[]>([]);
  // Where "Older runs" goes on: not asked yet (the job's answer holds the newest runs), a
  // listing's cursor, or none left.
  const [older, setOlder] = useState<{ readonly cursor?: string } | undefined>();
  const [message, setMessage] = useState("");
  const [cron, setCron] = useState("");
  const [loadingOlder, setLoadingOlder] = useState(false);

  const load = useCallback(async () => {
    try {
      // The job's answer carries its newest runs: the page lists runs only when asked for older.
      const j = await client.getJob(jobId);
      setJob(j);
      setRuns(j.runs);
      setOlder(j.runs.length >= JOB_RECENT_RUNS ? {} : undefined);
      setCron(j.cron ?? "");
      if (j.status === "active" || j.status === "paused") {
        setPreview(
          await client.previewSchedule({
            cron: j.cron,
            timeZone: j.cron ? j.timeZone : undefined,
            dstPolicy: j.cron ? j.dstPolicy : undefined,
            interval: j.interval?.every,
            runAt: j.runAt,
            startAt: j.startAt,
            endAt: j.endAt,
            jitter: j.jitter,
            jobId: j.jitter ? j.jobId : undefined,
            count: 5,
          }),
        );
      } else setPreview(undefined);
    } catch (e) {
      setMessage(messageOf(e));
    }
  }, [jobId]);
  useEffect(() => {
    void load();
  }, [load]);

  /** Runs an action, says how it went, shows the job as it is now; whether it succeeded. */
  const act = async (label: string, call: () => Promise<unknown>): Promise<boolean> => {
    let done = false;
    try {
      await call();
      setMessage(`${label}: done`);
      done = true;
    } catch (e) {
      setMessage(`${label}: ${messageOf(e)}`);
    }
    await load();
    return done;
  };
  const olderRuns = async () => {
    if (loadingOlder) return; // a second click while the page comes would add it twice
    setLoadingOlder(true);
    try {
      // The listing starts at the newest runs, which are shown already: page on past them.
      const shown = new Set(runs.map((run) => run.runId));
      let cursor = older?.cursor;
      let added: RunResponse[] = [];
      do {
        const page = await client.listRuns(jobId, { limit: RUNS_PAGE, ...(cursor ? { cursor } : {}) });
        added = page.runs.filter((run) => !shown.has(run.runId));
        cursor = page.cursor;
      } while (added.length === 0 && cursor !== undefined);
      setRuns([...runs, ...added]);
      setOlder(cursor === undefined ? undefined : { cursor });
    } catch (e) {
      setMessage(messageOf(e));
    } finally {
      setLoadingOlder(false);
    }
  };
  if (!job)
    return (
      <p role="status" class="message">
        {message || "Loading..."}
      </p>
    );
  const open = job.status === "active" || job.status === "paused";
  return (
    <section aria-labelledby="job-title">
      <h1 id="job-title">{job.jobId}</h1>
      <p role="status" aria-live="polite" class="message">
        {message}
      </p>
      <div class="actions">
        {job.status === "active" && (
          <button type="button" onClick={() => act("Pause", () => client.pauseJob(jobId))}>
            Pause
          </button>
        )}
        {job.status === "paused" && (
          <button type="button" class="primary" onClick={() => act("Resume", () => client.resumeJob(jobId))}>
            Resume
          </button>
        )}
        {job.status === "active" && (
          <button type="button" onClick={() => act("Run now", () => client.triggerJob(jobId))}>
            Run now
          </button>
        )}
        {open && (
          <button type="button" class="danger" onClick={() => act("Cancel", () => client.cancelJob(jobId))}>
            Cancel job
          </button>
        )}
      </div>
      <div class="grid">
        <section class="card" aria-labelledby="job-facts">
          <h2 id="job-facts">Schedule</h2>
          <dl class="facts">
            <dt>Type</dt>
            <dd>
              <span class="mono">{job.type}</span>
              {job.target && <span class="muted"> (a push job: the scheduler delivers its runs)</span>}
            </dd>
            <dt>Status</dt>
            <dd id="job-status">
              <span class={`badge status-${job.status}`}>{job.status}</span>
              {job.pauseReason ? ` (${job.pauseReason})` : ""}
            </dd>
            <dt>Schedule</dt>
            <dd>
              {scheduleText(job)}
              {job.cron && job.dstPolicy !== "first-occurrence" ? `, DST ${job.dstPolicy}` : ""}
              {job.jitter ? `, jitter ${job.jitter}` : ""}
            </dd>
            <dt>Next run</dt>
            <dd class="mono">{job.nextRunAt ?? "-"}</dd>
            <dt>Policies</dt>
            <dd>
              missed runs {job.missedRuns}, overlap {job.overlapPolicy}
              {job.maxLateness ? `, max lateness ${job.maxLateness}` : ""}
            </dd>
            <dt>Version</dt>
            <dd>
              {job.version} <span class="muted">(created {job.createdAt})</span>
            </dd>
          </dl>
        </section>
        <section class="card" aria-labelledby="job-target">
          <h2 id="job-target">{job.target ? "Target" : "Delivery"}</h2>
          <TargetFacts job={job} />
        </section>
      </div>
      <LabelsCard job={job} act={act} />
      {open && job.cron !== undefined && (
        <section class="card" aria-labelledby="job-edit">
          <h2 id="job-edit">Edit schedule</h2>
          <form
            class="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              void act("Edit", () => client.updateJob(jobId, { cron }, { ifMatch: job.version }));
            }}
          >
            <label>
              Cron <input value={cron} onInput={(e) => setCron((e.target as HTMLInputElement).value)} />
            </label>
            <button type="submit">Save</button>
          </form>
        </section>
      )}
      {preview && (
        <section class="card" aria-labelledby="job-next">
          <h2 id="job-next">Next runs</h2>
          {preview.runs.length === 0 && <p class="muted">None: every run this job will have is made.</p>}
          <ul>
            {preview.runs.map((run) => (
              <li key={run.at}>
                <span class="mono">{run.at}</span>
                {/* The job's local time, where it is not UTC's (offset zero says nothing new). */}
                {!/(Z|[+-]00:00)$/.test(run.local) && <span class="muted"> ({run.local})</span>}
                {run.dst ? ` DST: ${run.dst}` : ""}
                {run.jitter ? ` jitter ${run.jitter}` : ""}
              </li>
            ))}
          </ul>
        </section>
      )}
      <section class="card" aria-labelledby="job-runs">
        <h2 id="job-runs">Runs</h2>
        <RunTimelineList runs={runs} now={Date.now()} />
        {older !== undefined && (
          <p class="pager">
            <button type="button" disabled={loadingOlder} onClick={() => void olderRuns()}>
              Older runs
            </button>
          </p>
        )}
      </section>
      <section class="card" aria-labelledby="job-audit">
        <h2 id="job-audit">Audit trail</h2>
        <ul>
          {job.audit.map((entry) => (
            <li key={`${entry.at}-${entry.action}`}>
              <span class="mono">{entry.at}</span>: {entry.action} by <span class="mono">{entry.by}</span>
              {entry.reason ? ` (${entry.reason})` : ""}
              {entry.fields ? ` (${entry.fields.join(", ")})` : ""}
            </li>
          ))}
        </ul>
      </section>
    </section>
  );
}
