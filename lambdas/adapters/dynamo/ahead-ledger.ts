import type { NativeAttributeValue } from "@aws-sdk/lib-dynamodb";
import type { AheadLedger, AheadLedgerEntry, AheadLedgerMove } from "../../core/ports";

/**
 * The ahead ledger (decision 0059) in one item: per group, `t<NN>` the end of the last slice a
 * tick handed out, `r<NN>` where a failed sweep rewound it to (absent unless one did) and
 * `n<NN>` how many rewinds it has had. One item, so a tick records all its groups in one write:
 * 32 groups' numbers are well under 1 KB (one write unit).
 */
export const AHEAD_LEDGER_KEY = { pk: "SWEEP#AHEAD", sk: "LEDGER" } as const;

const through = (group: number) => `t${String(group).padStart(2, "0")}`;
const rewound = (group: number) => `r${String(group).padStart(2, "0")}`;
const rewinds = (group: number) => `n${String(group).padStart(2, "0")}`;

/** The ledger as the item holds it; groups it has never recorded are absent. */
export function ledgerOfItem(item: Record<string, NativeAttributeValue> | undefined): AheadLedger {
  const ledger = new Map<number, AheadLedgerEntry>();
  for (const [name, value] of Object.entries(item ?? {})) {
    const match = /^t(\d{2})$/.exec(name);
    if (!match?.[1] || typeof value !== "number") continue;
    const group = Number(match[1]);
    const rewoundTo = item?.[rewound(group)];
    const count = item?.[rewinds(group)];
    ledger.set(group, {
      through: value,
      rewoundTo: typeof rewoundTo === "number" ? rewoundTo : undefined,
      rewinds: typeof count === "number" ? count : undefined,
    });
  }
  return ledger;
}

/**
 * The update recording a tick's slices: each group's end set and its rewind removed, on the
 * condition that each entry is still as the tick read it, its count of rewinds included (a
 * rewind since, or another tick's move, fails it all). The count is left as it is: it only grows.
 */
export function moveExpression(moves: readonly AheadLedgerMove[]) {
  const names: Record<string, string> = {};
  const values: Record<string, number> = {};
  const sets: string[] = [];
  const removes: string[] = [];
  const conditions: string[] = [];
  moves.forEach((move, i) => {
    names[`#t${i}`] = through(move.group);
    names[`#r${i}`] = rewound(move.group);
    names[`#n${i}`] = rewinds(move.group);
    values[`:t${i}`] = move.through;
    sets.push(`#t${i} = :t${i}`);
    removes.push(`#r${i}`);
    if (move.read === undefined) {
      conditions.push(`attribute_not_exists(#t${i})`);
    } else {
      values[`:o${i}`] = move.read.through;
      conditions.push(`#t${i} = :o${i}`);
    }
    if (move.read?.rewoundTo === undefined) {
      conditions.push(`attribute_not_exists(#r${i})`);
    } else {
      values[`:w${i}`] = move.read.rewoundTo;
      conditions.push(`#r${i} = :w${i}`);
    }
    if (move.read?.rewinds === undefined) {
      conditions.push(`attribute_not_exists(#n${i})`);
    } else {
      values[`:n${i}`] = move.read.rewinds;
      conditions.push(`#n${i} = :n${i}`);
    }
  });
  return {
    UpdateExpression: `SET ${sets.join(", ")} REMOVE ${removes.join(", ")}`,
    ConditionExpression: conditions.join(" AND "),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/**
 * The update recording a failed sweep: the group's rewind moved back to `from`, never forward,
 * and counted. A group the ledger has not recorded yet (its first tick's write had not landed)
 * is recorded as handed out to `from`: an entry always has its end, and that tick's write, which
 * expected none, fails for it. Refused when the rewind is already at or before `from`; then
 * `countRewindExpression` counts it all the same.
 */
export function rewindExpression(group: number, from: number) {
  return {
    UpdateExpression: "SET #r = :from, #t = if_not_exists(#t, :from) ADD #n :one",
    ConditionExpression: "attribute_not_exists(#r) OR #r > :from",
    ExpressionAttributeNames: { "#r": rewound(group), "#t": through(group), "#n": rewinds(group) },
    ExpressionAttributeValues: { ":from": from, ":one": 1 },
  };
}

/**
 * A rewind that found the group already rewound to `from` or earlier: only counted, and only
 * while that still holds. The tick whose slice began at that earlier rewind may not have
 * recorded it yet; its write removes the rewind unless the count it expects has moved, and this
 * sweep's unsent firings are in that slice. Refused when the rewind has gone since the first
 * write was refused (that tick's write landed between the two): the rewind is then written
 * again (`rewindExpression`), which now takes.
 */
export function countRewindExpression(group: number, from: number) {
  return {
    UpdateExpression: "ADD #n :one",
    ConditionExpression: "#r <= :from",
    ExpressionAttributeNames: { "#n": rewinds(group), "#r": rewound(group) },
    ExpressionAttributeValues: { ":one": 1, ":from": from },
  };
}
