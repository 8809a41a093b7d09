/** A line of a JSON-lines file: its number (from 1), its text, and its value, or why it is none. */
export type JsonLine =
  | { readonly number: number; readonly source: string; readonly value: unknown }
  | { readonly number: number; readonly problem: string };

/**
 * The non-blank lines of a JSON-lines file (a byte-order mark and CRLF endings allowed), each
 * parsed on its own, so one bad line is that line's problem and the others stand.
 */
export function jsonLines(text: string): JsonLine[] {
  const lines: JsonLine[] = [];
  text
    .replace(/^\uFEFF/, "")
    .split("\n")
    .forEach((raw, i) => {
      const source = raw.replace(/\r$/, "");
      if (source.trim() === "") return;
      try {
        lines.push({ number: i + 1, source, value: JSON.parse(source) });
      } catch {
        lines.push({ number: i + 1, problem: "not valid JSON" });
      }
    });
  return lines;
}
