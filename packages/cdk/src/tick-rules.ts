import type { SchedulerSettings } from "../../../lambdas/definitions/settings";

/** One EventBridge rule of the tick: its schedule expression and the turn its event names. */
export interface TickRule {
  readonly id: string;
  readonly expression: string;
  readonly turn: number;
}

/**
 * The tick's EventBridge rules. Where each group is swept every tick, one rate rule. Where the
 * groups take turns (decision 0056), one cron rule per turn, each firing on its own minutes and
 * naming its turn in the event: a turn taken from the clock would repeat when EventBridge
 * delivers one minute's tick late and the next one early, leaving half the groups unswept for
 * twice their period. The turns' rules only stay in step if a turn's period divides the hour,
 * which cron's minute field restarts; anything else is refused, naming the setting.
 */
export function tickRules(
  settings: Pick<SchedulerSettings, "tickSeconds" | "sweepEveryTicks">,
  /** How an error names a setting: `settings.<key>` for the construct's props, the context key for the app's. */
  nameOf: (key: keyof SchedulerSettings) => string = (key) => `settings.${key}`,
): TickRule[] {
  const { tickSeconds, sweepEveryTicks: every } = settings;
  if (every === 1)
    return [
      {
        id: "Tick",
        expression: `rate(${minutesOf(tickSeconds, nameOf)} minute${tickSeconds === 60 ? "" : "s"})`,
        turn: 0,
      },
    ];
  const periodSeconds = tickSeconds * every;
  if (tickSeconds % 60 !== 0 || 3600 % periodSeconds !== 0) {
    throw new Error(
      `${nameOf("sweepEveryTicks")}: with turns, tickSeconds must be whole minutes and tickSeconds times sweepEveryTicks (${periodSeconds} s) must divide the hour`,
    );
  }
  const tickMinutes = tickSeconds / 60;
  const periodMinutes = periodSeconds / 60;
  return Array.from({ length: every }, (_, turn) => {
    const first = turn * tickMinutes;
    const minutes = periodMinutes === 60 ? `${first}` : `${first}/${periodMinutes}`;
    return { id: turn === 0 ? "Tick" : `TickTurn${turn}`, expression: `cron(${minutes} * * * ? *)`, turn };
  });
}

function minutesOf(seconds: number, nameOf: (key: "tickSeconds") => string): number {
  if (seconds % 60 !== 0) throw new Error(`${nameOf("tickSeconds")}: EventBridge ticks in whole minutes`);
  return seconds / 60;
}
