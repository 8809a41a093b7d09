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
  /** Runs it may hold besides those (what it takes in ahead of their time: `aheadLimit`). */
  readonly prefetch: number;
  /** Runs in hand: held, waiting for a slot, or executing. */
  readonly inHand: number;
  /** Of those, held runs whose start is more than AHEAD_MS away. */
  readonly heldAhead: number;
  /** Runs asked for by lease requests still out. */
  readonly asking: number;
}

/**
 * The most runs a worker holds ahead of their time: half its room in hand (`concurrency +
 * prefetch`, rounded down), never more than `prefetch`. The rest is kept for runs due within
 * the base lead. A dense second's runs reach the lanes over several seconds: each sweep group
 * estimates the second's density, and so its lead, from its own 1/32 of the jobs, and those
 * estimates differ by a few seconds; SQS delays are whole seconds besides. One tenant's
 * thousands visible first fill what workers take ahead; another tenant's runs that show up
 * later are leased when the second is 5 s away, at fair shares with the first tenant's, in the
 * places kept. Keeping only `concurrency` of them (10 of 100 in bench-fairness) left too few:
 * about one run in three a few of the small tenant's runs waited for places freed after the
 * second (400-570 ms late).
 */
export function aheadLimit(concurrency: number, prefetch: number): number {
  return Math.min(prefetch, Math.floor((concurrency + prefetch) / 2));
}

/**
 * How many runs the next lease request may ask for (0: wait and look again). Room in hand is
 * `concurrency + prefetch`, but a request may only ask for what is left of the ahead limit
 * (`aheadLimit`) after the runs held ahead and the runs asked for by requests still out: a
 * worker cannot know before the answer whether what it asks for is due now or a dense second's
 * runs 20 s ahead, so a first request (or two pollers at once) must not be able to fill the
 * places kept for runs due within the base lead. Runs that come due now do not count as held
 * ahead, so the next request asks again and a backlog of due runs still fills the whole room,
 * a request or two later.
 *
 * That holds while the limit is at least `concurrency` (a `prefetch` of at least `concurrency`:
 * the default). A smaller `prefetch` (1 says "do not hoard") would otherwise cap every request
 * below the free slots, and a backlog of due runs would trickle in a few runs a round trip;
 * such a worker asks for its room until it holds a run ahead, as before this rule (a review
 * found prefetch 1 asking for one run at a time). The worker cannot say which runs it wants
 * before the answer; a lease request that said how many may be ahead would close both gaps.
 */
export function leaseRoom(state: LeaseRoomState): number {
  const room = state.concurrency + state.prefetch - state.inHand - state.asking;
  const limit = aheadLimit(state.concurrency, state.prefetch);
  const capsEveryRequest = limit >= state.concurrency;
  const aheadRoom = capsEveryRequest || state.heldAhead > 0 ? limit - state.heldAhead - state.asking : room;
  return Math.max(0, Math.min(room, aheadRoom, MAX_PER_LEASE));
}
