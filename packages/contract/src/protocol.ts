/**
 * A run's message becomes visible in its lane this long before the run is due (longer for a
 * dense second): the lease protocol hands runs over a little early and the worker holds them
 * until their `startAt`.
 */
export const DELIVERY_LEAD_SECONDS = 5;
