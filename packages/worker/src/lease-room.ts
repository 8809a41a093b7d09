import { DELIVERY_LEAD_SECONDS } from "@jobsched/contract";

/** The most runs one lease request asks for; more room means more requests in flight. */
export const MAX_PER_LEASE = 50;

/**
 * A held run is "ahead" while its start is further away than the base lead: the scheduler only
 * hands such runs over at fair shares per lane (a dense second's runs, leased up to ~26 s early).
 */
export const AHEAD_MS = DELIVERY_LEAD_SECONDS * 1_000;

export interface LeaseRoomState {
  /** Runs the worker executes at once. */
  readonly concurrency: number;
  /** Runs it may hold besides those: the most it takes in ahead of their time. */
  readonly prefetch: number;
  /** Runs in hand: held, waiting for a slot, or executing. */
  readonly inHand: number;
  /** Of those, held runs whose start is more than AHEAD_MS away. */
  readonly heldAhead: number;
  /** Runs asked for by lease requests still out. */
  readonly asking: number;
}

/**
 * How many runs the next lease request may ask for (0: wait and look again). Room in hand is
 * `concurrency + prefetch`, but once runs are held ahead of their time, requests may only ask
 * for what is left of `prefetch`: the last `concurrency` places are kept for runs due within the
 * base lead. A dense second's runs reach the lanes over a second or two (every sweep group sends
 * its own), so a tenant whose few runs show up after another tenant's thousands still finds
 * workers with room for them once the second is near, instead of after the first batch is done.
 * With nothing held ahead, only the room counts (a steady stream of due runs is not slowed).
 */
export function leaseRoom(state: LeaseRoomState): number {
  const room = state.concurrency + state.prefetch - state.inHand - state.asking;
  const aheadRoom = state.heldAhead > 0 ? state.prefetch - state.heldAhead - state.asking : room;
  return Math.max(0, Math.min(room, aheadRoom, MAX_PER_LEASE));
}
