/**
 * DynamoDB's rules for the read units a read consumes, as pure arithmetic: the capacity meter
 * (capacity-meter.ts) applies them to what each call evaluated. The write rules are in
 * item-size.ts.
 */

/** Read sizes are rounded up to the next 4 KB. */
export const READ_UNIT_BYTES = 4 * 1024;

/**
 * One read of `bytes`, by doc pages "Read consistency" and "DynamoDB read and write operations"
 * (read request units): the size rounded up to the next 4 KB, one unit per 4 KB when strongly
 * consistent, half when eventually consistent. A read that finds nothing still costs one 4 KB:
 * an absent item, or a Query or Scan that evaluates nothing.
 *
 * GetItem passes the item's size. Query and Scan pass the sizes of all the items they evaluated
 * summed (before any filter, whatever the projection or Select; on an index, the index entries'
 * sizes), so the sum is rounded once. BatchGetItem is a GetItem per item: each item rounded on
 * its own, then added up. A query on a global secondary index is always eventually consistent.
 */
export function readUnits(bytes: number, consistent: boolean): number {
  return Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES)) * (consistent ? 1 : 0.5);
}

/**
 * One item of a TransactGetItems: "Managing capacity for transactions" reads every item twice,
 * once to prepare and once to commit, so a transactional read costs twice a strongly consistent
 * one: 2 units per 4 KB. An absent item still costs the minimum, 2.
 */
export function transactionalReadUnits(bytes: number): number {
  return 2 * readUnits(bytes, true);
}
