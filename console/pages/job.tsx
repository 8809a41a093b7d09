import type { JobResponse, Preview, RunResponse } from "@jobsched/contract";
import { useCallback, useEffect, useState } from "preact/hooks";
import { client, messageOf } from "../api";
import { scheduleText } from "./jobs";
import { TableHead } from "./table-head";

/** A job: schedule, the next runs with DST marks, recent runs, audit trail, and its actions. */
export function JobPage({ jobId }: { readonly jobId: string }) {
  const [job, setJob] = useState<JobResponse | undefined>();
  const [preview, setPreview] = useState<Preview | undefined>();
  const [message, setMessage] = useState("");
  const [cron, setCron] = useState("");

  const load = useCallback(async () => {
    try {
      const j = await client.getJob(jobId);
      setJob(j);
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

  const act = async (label: string, call: () => Promise<unknown>) => {
    try {
      await call();
      setMessage(`${label}: done`);
    } catch (e) {
      setMessage(`${label}: ${messageOf(e)}`);
    }
    await load();
  };
  if (!job) return <p role="status">{message || "Loading..."}</p>;
  const open = job.status === "active" || job.status === "paused";
  return (
    <section aria-labelledby="job-title">
      <h1 id="job-title">{job.jobId}</h1>
      <p role="status" aria-live="polite">
        {message}
      </p>
      <dl class="facts">
        <dt>Type</dt>
        <dd>{job.type}</dd>
        <dt>Status</dt>
        <dd id="job-status">
          {job.status}
          {job.pauseReason ? ` (${job.pauseReason})` : ""}
        </dd>
        <dt>Schedule</dt>
        <dd>
          {scheduleText(job)}
          {job.cron && job.dstPolicy !== "first-occurrence" ? `, DST ${job.dstPolicy}` : ""}
          {job.jitter ? `, jitter ${job.jitter}` : ""}
        </dd>
        <dt>Policies</dt>
        <dd>
          missed runs {job.missedRuns}, overlap {job.overlapPolicy}, {job.delivery}, {job.maxAttempts}{" "}
          attempts
        </dd>
        <dt>Next run</dt>
        <dd>{job.nextRunAt ?? "-"}</dd>
      </dl>
      <div class="actions">
        {job.status === "active" && (
          <button type="button" onClick={() => act("Pause", () => client.pauseJob(jobId))}>
            Pause
          </button>
        )}
        {job.status === "paused" && (
          <button type="button" onClick={() => act("Resume", () => client.resumeJob(jobId))}>
            Resume
          </button>
        )}
        {job.status === "active" && (
          <button type="button" onClick={() => act("Run now", () => client.triggerJob(jobId))}>
            Run now
          </button>
        )}
        {open && (
          <button type="button" onClick={() => act("Cancel", () => client.cancelJob(jobId))}>
            Cancel job
          </button>
        )}
      </div>
      {open && job.cron !== undefined && (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void act("Edit", () => client.updateJob(jobId, { cron }, { ifMatch: job.version }));
          }}
        >
          <label>
            Cron <input value={cron} onInput={(e) => setCron((e.target as HTMLInputElement).value)} />
          </label>{" "}
          <button type="submit">Save</button>
        </form>
      )}
      {preview && (
        <>
          <h2>Next runs</h2>
          <ul>
            {preview.runs.map((run) => (
              <li key={run.at}>
                {run.at} ({run.local}){run.dst ? ` DST: ${run.dst}` : ""}
                {run.jitter ? ` jitter ${run.jitter}` : ""}
              </li>
            ))}
          </ul>
        </>
      )}
      <h2>Recent runs</h2>
      <RunsTable runs={job.runs} />
      <h2>Audit trail</h2>
      <ul>
        {job.audit.map((entry) => (
          <li key={`${entry.at}-${entry.action}`}>
            {entry.at}: {entry.action} by {entry.by}
            {entry.reason ? ` (${entry.reason})` : ""}
            {entry.fields ? ` (${entry.fields.join(", ")})` : ""}
          </li>
        ))}
      </ul>
    </section>
  );
}

export function RunsTable({ runs }: { readonly runs: readonly RunResponse[] }) {
  return (
    <div class="scroll">
      <table>
        <TableHead columns={["Scheduled for", "Status", "Lateness", "Attempt", "Fence", "Error"]} />
        <tbody>
          {runs.map((run) => (
            <tr key={run.runId}>
              <td>{run.scheduledFor}</td>
              <td class={`status-${run.status}`}>{run.status}</td>
              <td>
                {run.startedAt === undefined
                  ? "-"
                  : `${Math.max(0, Date.parse(run.startedAt) - Date.parse(run.scheduledFor))} ms`}
              </td>
              <td>{run.attempt}</td>
              <td>{run.fence}</td>
              <td>{run.error ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
