import { describe, expect, it } from "vitest";
import { atMost, exactly, holds, verdict } from "../../scripts/bench-verdict";

/**
 * The benches' one verdict: the line it prints and the exit code come from the same checks, so
 * a bench that prints a missed target cannot exit 0 (bench:cost did, at $18 against $5).
 */
describe("a bench's verdict", () => {
  it("fails, line and exit code alike, when one target is missed", () => {
    // Prepare: bench:cost's figure today against its target, beside a target that holds.
    const checks = [
      exactly("runs created", 1_000, 1_000),
      atMost("total per million runs, USD", 18.07, 8, (n) => `$${n.toFixed(2)}`),
    ];
    // Act
    const { lines, exitCode } = verdict(checks);
    // Assess
    expect(lines).toEqual([
      "ok   runs created 1000 (target 1000)",
      "MISS total per million runs, USD $18.07 (target <= $8.00)",
      "FAIL",
    ]);
    expect(exitCode).toBe(1);
  });

  it("passes only when every target holds", () => {
    const { lines, exitCode } = verdict([atMost("read-unit ratio", 1.2, 1.2), holds("no duplicates", true)]);
    expect(lines.at(-1)).toBe("PASS");
    expect(exitCode).toBe(0);
  });

  it("fails a figure that is not a number, a count off by one, and a verdict with no checks", () => {
    expect(verdict([atMost("p99 ms", Number.NaN, 100)]).exitCode).toBe(1);
    expect(verdict([exactly("runs created", 999, 1_000)]).exitCode).toBe(1);
    expect(verdict([holds("memory", false)]).lines.at(-1)).toBe("FAIL");
    expect(verdict([]).exitCode).toBe(1);
  });
});
