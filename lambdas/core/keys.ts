/**
 * Partitioning keys, in one place.
 *
 * Shards spread jobs over 1,024 index partitions by a stable hash of the job id, so the due
 * index never has a hot partition at the top of the hour. Buckets cut the index by UTC hour,
 * so a sweep reads only the buckets between its cursor and its horizon.
 */
export const SHARD_COUNT = 1024;
/** Shards swept together by one sweep invocation. */
export const SHARDS_PER_GROUP = 32;
export const SWEEP_GROUP_COUNT = SHARD_COUNT / SHARDS_PER_GROUP;
/** Partitions of the repair index; open runs are few, so few partitions suffice. */
export const REPAIR_PARTITIONS = 16;

const HOUR_MS = 3_600_000;

/** FNV-1a, 32 bit: stable across runtimes and releases, which a shard function must be. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export function shardOf(jobId: string): number {
  return fnv1a(jobId) % SHARD_COUNT;
}

/** The hour bucket of an instant: hours since the epoch. */
export function bucketOf(epochMs: number): number {
  return Math.floor(epochMs / HOUR_MS);
}

export function dueKeyOf(bucket: number, shard: number): string {
  return `${bucket}#${String(shard).padStart(4, "0")}`;
}

/** The shard group a job is swept by. */
export function groupOf(jobId: string): number {
  return Math.floor(shardOf(jobId) / SHARDS_PER_GROUP);
}

/**
 * The due index's ahead partition of a group's hour (decision 0058): one-offs made at create
 * more than a sweep's reach ahead, read by the time ranges the tick hands out (decision 0059). One key
 * per group and hour, not per shard: a sweep queries it once, and only creates write it.
 */
export function aheadKeyOf(bucket: number, group: number): string {
  return `A#${bucket}#${String(group).padStart(2, "0")}`;
}

/** The first instant of an hour bucket. */
export function bucketStart(bucket: number): number {
  return bucket * HOUR_MS;
}

/**
 * The shard groups of one turn: every group every `everyTicks` ticks, the groups taking turns
 * (decision 0056), so each tick sweeps about as many. In AWS each turn has its own EventBridge
 * rule, which names the turn in its event; a tick delivered twice sweeps the same groups twice,
 * which is harmless.
 */
export function groupsOfTurn(turn: number, everyTicks: number): number[] {
  const every = Math.max(1, Math.floor(everyTicks));
  const own = ((Math.floor(turn) % every) + every) % every;
  return Array.from({ length: SWEEP_GROUP_COUNT }, (_, g) => g).filter((g) => g % every === own);
}

/**
 * The turn of the tick scheduled at `now`: its number since the epoch, modulo the turns. It is
 * the turn the rules' minutes give (decision 0056), but taken from a clock it is only right where
 * the tick is not delivered late: a tick that names no turn (invoked by hand) falls back on it.
 */
export function turnAt(now: number, tickSeconds: number, everyTicks: number): number {
  return Math.floor(now / (tickSeconds * 1000)) % Math.max(1, Math.floor(everyTicks));
}

export function shardsOfGroup(group: number): number[] {
  const first = group * SHARDS_PER_GROUP;
  return Array.from({ length: SHARDS_PER_GROUP }, (_, i) => first + i);
}

export function repairKeyOf(jobId: string): string {
  return `R#${String(fnv1a(jobId) % REPAIR_PARTITIONS).padStart(2, "0")}`;
}

export function allRepairKeys(): string[] {
  return Array.from({ length: REPAIR_PARTITIONS }, (_, i) => `R#${String(i).padStart(2, "0")}`);
}
