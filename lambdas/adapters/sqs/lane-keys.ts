import { createHash } from "node:crypto";
import { LANE_SEPARATOR } from "../../definitions/queues";

/** The keys and names of a lane: its lookup record, its registry entry, its queue. */

/** Registry partitions: enough that no lane write concentrates on one. */
export const LANE_REGISTRY_SHARDS = 16;

export const lanePk = (type: string) => `LANE#${type}`;

/** The registry entry's key: one of LANE_REGISTRY_SHARDS partitions, by tenant and type. */
export function laneEntryKey(tenant: string, type: string): { pk: string; sk: string } {
  const shard = Number.parseInt(laneHash(tenant, type).slice(0, 8), 16) % LANE_REGISTRY_SHARDS;
  return { pk: laneRegistryPk(shard), sk: `${tenant}\n${type}` };
}
export const laneRegistryPk = (shard: number) => `LANES#${String(shard).padStart(2, "0")}`;

/**
 * A lane's queue name: the template (run) queue's name, `_`, a hash of tenant and type, and
 * from the second generation on `-<generation>`. The underscore is the one character stack
 * names (and so this stack's other queue names) lack.
 */
export function laneQueueName(
  templateQueueUrl: string,
  tenant: string,
  type: string,
  generation = 0,
): string {
  const name = `${queueNameOf(templateQueueUrl)}${LANE_SEPARATOR}${laneHash(tenant, type)}`;
  return generation > 0 ? `${name}-${generation}` : name;
}
function laneHash(tenant: string, type: string): string {
  return createHash("sha256").update(`${tenant}\n${type}`).digest("hex").slice(0, 16);
}

export function queueNameOf(url: string): string {
  return url.slice(url.lastIndexOf("/") + 1);
}
