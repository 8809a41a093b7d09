/** Plain-text tables for the CLI: columns padded to their widest cell. */
export function table(
  header: readonly string[],
  rows: ReadonlyArray<readonly (string | undefined)[]>,
): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => (cell ?? "").padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
