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
      <p role="status" aria-live="polite">
        {message}
      </p>
      <label>
        Filter by type or job{" "}
        <input value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
      </label>{" "}
      <button type="button" onClick={() => replay("All", () => client.replayAllDeadLetters())}>
        Replay all
      </button>
      <div class="scroll">
        <table>
          <TableHead columns={["Run", "Type", "Scheduled for", "Attempt", "Error", "Replay"]} />
          <tbody>
            {shown.map((letter) => (
              <tr key={letter.runId}>
                <td>
                  <a href={`#/jobs/${encodeURIComponent(letter.jobId)}`}>{letter.runKey}</a>
                </td>
                <td>{letter.type}</td>
                <td>{letter.scheduledFor}</td>
                <td>{letter.attempt}</td>
                <td>{letter.error ?? ""}</td>
                <td>
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
      </div>
      <p>
        {shown.length} dead letter(s){" "}
        <button type="button" disabled={cursor === undefined} onClick={() => void load(cursor)}>
          Next page
        </button>
      </p>
    </section>
  );
}
