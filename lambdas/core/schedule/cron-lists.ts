import { CronExpressionParser } from "cron-parser";

/**
 * Vixie cron reads a list as a set of values, so a list may name a value twice: `SUN,7` (7 is
 * Sunday too), `1-5,3`, `0,0`. cron-parser refuses any repeated value. Each list with more than
 * one item is rewritten as the set it names, each item expanded by cron-parser itself (names,
 * ranges, steps), the values in order, Sunday as 0; items with L, W or # are kept as written, and
 * a list with `*` or `?` is left alone (it would stop restricting its field). A list cron-parser
 * cannot read is left for the full parse to report.
 */
const FIELDS = ["minute", "hour", "dayOfMonth", "month", "dayOfWeek"] as const;
const DAY_OF_WEEK = 4;
/** cron's special items: L (last), nL / MONL (last weekday n), nW and LW (nearest weekday), n#k. */
const SPECIAL = /^(L|LW|\d+L|[A-Z]{3}L|\d+W|(\d+|[A-Z]{3})#\d+)$/i;

export function mergeListRepeats(fields: string): string {
  return fields
    .split(" ")
    .map((field, index) => mergeField(field, index))
    .join(" ");
}

function mergeField(field: string, index: number): string {
  const items = field.split(",");
  const name = FIELDS[index];
  if (items.length < 2 || name === undefined || items.some((item) => item === "*" || item === "?"))
    return field;
  const special = [...new Set(items.filter((item) => SPECIAL.test(item)).map((item) => item.toUpperCase()))];
  const values = new Set<number>();
  for (const item of items.filter((candidate) => !SPECIAL.test(candidate))) {
    const probe = ["*", "*", "*", "*", "*"];
    probe[index] = item;
    let expanded: readonly (number | string)[];
    try {
      expanded = CronExpressionParser.parse(probe.join(" "), { tz: "UTC", currentDate: 0 }).fields[name]
        .values;
    } catch {
      return field;
    }
    for (const value of expanded) {
      const number = Number(value);
      values.add(index === DAY_OF_WEEK && number === 7 ? 0 : number);
    }
  }
  return [...[...values].sort((a, b) => a - b).map(String), ...special].join(",");
}
