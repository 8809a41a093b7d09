import type { DeadLetterResponse } from "@jobsched/contract";
import { useCallback, useEffect, useState } from "preact/hooks";
import { client, messageOf } from "../api";
import { TableHead } from "./table-head";

/** Dead letters, most recent first: filter by type or job, replay one or all. */
export function DeadLettersPage() {
  const [letters, setLetters] = useState<DeadLetterResponse[]>([]);
  const [cursor, setCursor] = useState<string | undefined>();
  const [filter, setFilter] = useState("");
  const [message, setMessage] = useState("");

  const load = useCallback(async (from?: string) => {
    try {
      const page = await client.listDeadLetters(from === undefined ? {} : { cursor: from });
      setLetters(page.deadLetters);
      setCursor(page.cursor);
    } catch (e) {
      setMessage(messageOf(e));
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  const replay = async (label: string, call: () => Promise<unknown>) => {
    try {
      await call();
      setMessage(`${label}: replayed`);
    } catch (e) {
      setMessage(`${label}: ${messageOf(e)}`);
    }
    await load();
  };
  const shown = letters.filter((l) => !filter || l.type.includes(filter) || l.jobId.includes(filter));
  return (
    <section aria-labelledby="dlq-title">
      <h1 id="dlq-title">Dead letters</h1>
      <p role="status" aria-live="polite" class="message">
        {message}
      </p>
      <div class="card filters">
        <label>
          Filter by type or job{" "}
          <input value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
        </label>
        <button
          type="button"
          class="primary"
          onClick={() => replay("All", () => client.replayAllDeadLetters())}
        >
          Replay all
        </button>
      </div>
      <div class="card scroll">
        <table class="stacking" role="table">
          <TableHead columns={["Run", "Type", "Scheduled for", "Attempt", "Error", "Replay"]} />
          <tbody role="rowgroup">
            {shown.map((letter) => (
              <tr role="row" key={letter.runId}>
                <td role="cell" data-label="Run">
                  <a href={`#/jobs/${encodeURIComponent(letter.jobId)}`}>{letter.runKey}</a>
                </td>
                <td role="cell" data-label="Type" class="mono">
                  {letter.type}
                </td>
                <td role="cell" data-label="Scheduled for" class="mono">
                  {letter.scheduledFor}
                </td>
                <td role="cell" data-label="Attempt">
                  {letter.attempt}
                </td>
                <td role="cell" data-label="Error" class="attempt-error">
                  {letter.error ?? ""}
                </td>
                <td role="cell" data-label="Replay">
                  <button
                    type="button"
                    aria-label={`Replay ${letter.runKey}`}
                    onClick={() => replay(letter.runKey, () => client.replayDeadLetter(letter.runId))}
                  >
                    Replay
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {shown.length === 0 && <p class="muted">No dead letters.</p>}
      </div>
      <p class="pager">
        <span class="muted">{shown.length} dead letter(s)</span>
        <button type="button" disabled={cursor === undefined} onClick={() => void load(cursor)}>
          Next page
        </button>
      </p>
    </section>
  );
}
