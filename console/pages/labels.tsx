import { type JobResponse, LABEL_KEY, LABEL_VALUE, MAX_LABELS } from "@jobsched/contract";
import { useState } from "preact/hooks";
import { client } from "../api";

/**
 * A job's labels as chips, edited in place while the job is open: each add or removal is one
 * merge patch of `labels` (a key set to null is removed), sent with the version shown as
 * If-Match, so an edit made elsewhere meanwhile is refused rather than overwritten. The key and
 * value are checked here by the API's own rules first, so a typo is named before a request.
 */
export function LabelsCard({
  job,
  act,
}: {
  readonly job: JobResponse;
  readonly act: (label: string, call: () => Promise<unknown>) => Promise<boolean>;
}) {
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [problem, setProblem] = useState("");
  const editable = job.status === "active" || job.status === "paused";
  const entries = Object.entries(job.labels).sort(([a], [b]) => a.localeCompare(b));
  const patch = (labels: Record<string, string | null>) =>
    client.updateJob(job.jobId, { labels }, { ifMatch: job.version });

  const add = (event: Event) => {
    event.preventDefault();
    const k = key.trim();
    const v = value.trim();
    const why = !LABEL_KEY.test(k)
      ? "Key: 1-64 of letters, digits and . _ : / -, starting with a letter or digit"
      : !LABEL_VALUE.test(v)
        ? "Value: up to 128 of letters, digits and . _ : / @ + -"
        : !Object.hasOwn(job.labels, k) && entries.length >= MAX_LABELS
          ? `A job has at most ${MAX_LABELS} labels`
          : "";
    setProblem(why);
    if (why) return;
    void act(`Label ${k}`, () => patch({ [k]: v })).then((done) => {
      if (!done) return; // kept, to correct and send again
      setKey("");
      setValue("");
    });
  };
  return (
    <section class="card" aria-labelledby="job-labels">
      <h2 id="job-labels">Labels</h2>
      {entries.length === 0 ? (
        <p class="muted">No labels.</p>
      ) : (
        <ul class="labels" aria-label="Labels">
          {entries.map(([k, v]) => (
            <li key={k}>
              {k}={v}
              {editable && (
                <button
                  type="button"
                  aria-label={`Remove label ${k}`}
                  onClick={() => act(`Remove ${k}`, () => patch({ [k]: null }))}
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {editable && (
        <form class="inline-form" onSubmit={add} aria-label="Add or change a label">
          <label>
            Label key <input value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Label value{" "}
            <input value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit">Set label</button>
        </form>
      )}
      {problem && (
        <p role="alert" class="error">
          {problem}
        </p>
      )}
    </section>
  );
}
