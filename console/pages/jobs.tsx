import type { ListJobsInput } from "@jobsched/client/core";
import type { JobSummaryResponse, JobsPageResponse } from "@jobsched/contract";
import { useEffect, useState } from "preact/hooks";
import { client, messageOf } from "../api";
import { TableHead } from "./table-head";

/** Jobs, newest first: filter by status, type and label, find one by id, page on. */
export function JobsPage() {
  const [status, setStatus] = useState("");
  const [type, setType] = useState("");
  const [label, setLabel] = useState("");
  const [cursors, setCursors] = useState<string[]>([]);
  const [page, setPage] = useState<JobsPageResponse | undefined>();
  const [error, setError] = useState("");
  const [search, setSearch] = useState("");

  const cursor = cursors.at(-1);
  useEffect(() => {
    client
      .listJobs({
        limit: 25,
        ...(status ? { status: status as ListJobsInput["status"] } : {}),
        ...(type ? { type } : {}),
        ...(label ? { label } : {}),
        ...(cursor ? { cursor } : {}),
      })
      .then((answer) => {
        setPage(answer);
        setError("");
      })
      .catch((e: unknown) => setError(messageOf(e)));
  }, [status, type, label, cursor]);

  const filter = (set: (value: string) => void) => (event: Event) => {
    set((event.target as HTMLInputElement).value);
    setCursors([]);
  };
  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Jobs</h1>
      <form
        class="card filters"
        onSubmit={(event) => {
          event.preventDefault();
          if (search.trim()) window.location.hash = `#/jobs/${encodeURIComponent(search.trim())}`;
        }}
      >
        <label>
          Status{" "}
          <select value={status} onChange={filter(setStatus)}>
            <option value="">all</option>
            {["active", "paused", "cancelled", "completed"].map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Type <input value={type} onChange={filter(setType)} placeholder="send-invoice" />
        </label>
        <label>
          Label <input value={label} onChange={filter(setLabel)} placeholder="team=billing" />
        </label>
        <label>
          Job id <input value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary">
          Open
        </button>
      </form>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <div class="card scroll">
        {/* Roles spelled out: on a phone these cells are displayed as blocks (console.css), and some
            browsers drop a table's semantics with its display; biome.json allows the repetition here. */}
        <table class="stacking" role="table">
          <TableHead columns={["Job", "Type", "Status", "Schedule", "Next run"]} />
          <tbody role="rowgroup">
            {(page?.jobs ?? []).map((job) => (
              <tr role="row" key={job.jobId}>
                <td role="cell" data-label="Job">
                  <a href={`#/jobs/${encodeURIComponent(job.jobId)}`}>{job.jobId}</a>
                </td>
                <td role="cell" data-label="Type" class="mono">
                  {job.type}
                </td>
                <td role="cell" data-label="Status">
                  <span class={`badge status-${job.status}`}>{job.status}</span>
                </td>
                <td role="cell" data-label="Schedule">
                  {scheduleText(job)}
                </td>
                <td role="cell" data-label="Next run" class="mono">
                  {job.nextRunAt ?? "-"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {page?.jobs.length === 0 && <p class="muted">No jobs match.</p>}
      </div>
      <p class="pager">
        <span class="muted">{page?.jobs.length ?? 0} job(s) on this page</span>
        <button
          type="button"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Previous
        </button>{" "}
        <button
          type="button"
          disabled={page?.cursor === undefined}
          onClick={() => page?.cursor && setCursors([...cursors, page.cursor])}
        >
          Next
        </button>
      </p>
    </section>
  );
}

export function scheduleText(
  job: Pick<JobSummaryResponse, "cron" | "timeZone" | "interval" | "runAt">,
): string {
  if (job.cron) return `cron ${job.cron} (${job.timeZone ?? "UTC"})`;
  if (job.interval) return `every ${job.interval.every}`;
  return `at ${job.runAt ?? "-"}`;
}
