import { describe, expect, it } from "vitest";
import { groupsOfTurn, SWEEP_GROUP_COUNT } from "../../lambdas/core/keys";
import { tickRules } from "../../packages/cdk/src/tick-rules";

/** The minutes of an hour an EventBridge cron rule's minute field (`a/b` or `a`) fires on. */
function minutesOf(expression: string): number[] {
  const field = /^cron\((\S+) \* \* \* \? \*\)$/.exec(expression)?.[1];
  if (field === undefined) throw new Error(`not an hourly cron: ${expression}`);
  const [start, step] = field.split("/").map(Number);
  if (start === undefined || Number.isNaN(start)) throw new Error(`bad minute field: ${field}`);
  if (step === undefined) return [start];
  return Array.from({ length: 60 }, (_, m) => m).filter((m) => m >= start && (m - start) % step === 0);
}

describe("the tick's rules", () => {
  it("one rate rule where every group is swept every tick", () => {
    expect(tickRules({ tickSeconds: 60, sweepEveryTicks: 1 })).toEqual([
      { id: "Tick", expression: "rate(1 minute)", turn: 0 },
    ]);
    expect(tickRules({ tickSeconds: 180, sweepEveryTicks: 1 })[0]?.expression).toBe("rate(3 minutes)");
  });

  it("with turns, fire one rule per tick, the turns in order across every hour's turn, so each group is swept once a period", () => {
    for (const [tickSeconds, every] of [
      [60, 2],
      [60, 3],
      [60, 5],
      [120, 2],
      [300, 4],
      [60, 10],
    ] as const) {
      const rules = tickRules({ tickSeconds, sweepEveryTicks: every });
      expect(rules.map((r) => r.turn)).toEqual(Array.from({ length: every }, (_, k) => k));
      // Two hours of minutes: which rule fires at each, and the groups its turn sweeps.
      const fired: { minute: number; turn: number }[] = [];
      for (let minute = 0; minute < 120; minute++)
        for (const rule of rules)
          if (minutesOf(rule.expression).includes(minute % 60)) fired.push({ minute, turn: rule.turn });
      const tickMinutes = tickSeconds / 60;
      expect(fired.map((f) => f.minute)).toEqual(
        Array.from({ length: 120 / tickMinutes }, (_, k) => k * tickMinutes),
      );
      expect(fired.map((f) => f.turn)).toEqual(fired.map((_, k) => k % every));
      const swept = fired.slice(0, every).flatMap((f) => groupsOfTurn(f.turn, every));
      expect(swept.sort((a, b) => a - b)).toEqual(Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g));
    }
  });

  it("refuses turns whose period does not divide the hour, naming the setting", () => {
    // As the construct's props name them, and as the app's context does.
    expect(() => tickRules({ tickSeconds: 60, sweepEveryTicks: 7 })).toThrow(
      /^settings\.sweepEveryTicks: .*divide the hour/,
    );
    expect(() => tickRules({ tickSeconds: 90, sweepEveryTicks: 2 })).toThrow(/whole minutes/);
    const contextKey = (key: string) => `context jobsched:${key}`;
    expect(() => tickRules({ tickSeconds: 90, sweepEveryTicks: 1 }, contextKey)).toThrow(
      /^context jobsched:tickSeconds/,
    );
  });
});
