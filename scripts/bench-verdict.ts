/**
 * One verdict for every bench: each target it prints is a check, the verdict line is PASS only
 * when every check holds, and the exit code is computed from the same list, so the line and the
 * code cannot disagree (bench:cost once printed its $5.00 target beside $18 and exited 0).
 */
export interface Check {
  /** What is measured and its limit, as printed: "read-unit ratio 1.003 (target <= 1.2)". */
  readonly line: string;
  readonly ok: boolean;
}

/** A measured figure that must not exceed `limit`; a figure that is not a number fails. */
export function atMost(
  name: string,
  measured: number,
  limit: number,
  format = (n: number) => String(n),
): Check {
  const ok = Number.isFinite(measured) && measured <= limit;
  return { line: `${name} ${format(measured)} (target <= ${format(limit)})`, ok };
}

/** A count that must be exactly `expected`. */
export function exactly(name: string, measured: number, expected: number): Check {
  return { line: `${name} ${measured} (target ${expected})`, ok: measured === expected };
}

/** A condition stated in words. */
export function holds(line: string, ok: boolean): Check {
  return { line, ok };
}

/** The lines a verdict prints (each check marked, then PASS or FAIL) and its exit code. */
export function verdict(checks: readonly Check[]): { readonly lines: string[]; readonly exitCode: 0 | 1 } {
  const ok = checks.length > 0 && checks.every((check) => check.ok);
  const lines = [
    ...checks.map((check) => `${check.ok ? "ok  " : "MISS"} ${check.line}`),
    ok ? "PASS" : "FAIL",
  ];
  return { lines, exitCode: ok ? 0 : 1 };
}

/** Prints a bench's verdict and sets the process's exit code from it. */
export function reportVerdict(checks: readonly Check[]): 0 | 1 {
  const { lines, exitCode } = verdict(checks);
  for (const line of lines) console.log(line);
  process.exitCode = exitCode;
  return exitCode;
}
