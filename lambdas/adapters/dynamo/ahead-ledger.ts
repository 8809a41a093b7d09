import type { NativeAttributeValue } from "@aws-sdk/lib-dynamodb";
import type { AheadLedger, AheadLedgerEntry, AheadLedgerMove } from "../../core/ports";

/**
 * The ahead ledger (decision 0059) in one item: per group, `t<NN>` the end of the last slice a
 * tick handed out, and `r<NN>` where a failed sweep rewound it to (absent unless one did). One
 * item, so a tick records all its groups in one write: 32 groups' numbers are well under 1 KB
 * (one write unit).
 */
export const AHEAD_LEDGER_KEY = { pk: "SWEEP#AHEAD", sk: "LEDGER" } as const;

const through = (group: number) => `t${String(group).padStart(2, "0")}`;
const rewound = (group: number) => `r${String(group).padStart(2, "0")}`;

/** The ledger as the item holds it; groups it has never recorded are absent. */
export function ledgerOfItem(item: Record<string, NativeAttributeValue> | undefined): AheadLedger {
  const ledger = new Map<number, AheadLedgerEntry>();
  for (const [name, value] of Object.entries(item ?? {})) {
    const match = /^t(\d{2})$/.exec(name);
    if (!match?.[1] || typeof value !== "number") continue;
    const group = Number(match[1]);
    const rewoundTo = item?.[rewound(group)];
    ledger.set(group, { through: value, rewoundTo: typeof rewoundTo === "number" ? rewoundTo : undefined });
  }
  return ledger;
}

/**
 * The update recording a tick's slices: each group's end set and its rewind removed, on the
 * condition that each entry is still as the tick read it (a rewind since, or another tick's move,
 * fails it all).
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
  });
  return {
    UpdateExpression: `SET ${sets.join(", ")} REMOVE ${removes.join(", ")}`,
    ConditionExpression: conditions.join(" AND "),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/**
 * The update recording a failed sweep: the group's rewind moved back to `from`, never forward.
 * A group the ledger has not recorded yet (its first tick's write had not landed) is recorded as
 * handed out to `from`: an entry always has its end, and that tick's write, which expected none,
 * fails for it.
 */
export function rewindExpression(group: number, from: number) {
  return {
    UpdateExpression: "SET #r = :from, #t = if_not_exists(#t, :from)",
    ConditionExpression: "attribute_not_exists(#r) OR #r > :from",
    ExpressionAttributeNames: { "#r": rewound(group), "#t": through(group) },
    ExpressionAttributeValues: { ":from": from },
  };
}
