/**
 * The one definition of the jobsched DynamoDB table. The CDK construct (lib/) and the local
 * bootstrap (local/) both build the table from this object, and the adapters read the key and
 * index names from it, so local and cloud cannot drift apart.
 *
 * Plain data only: no AWS SDK or CDK import, so every layer may read it.
 */
export type AttributeType = "S" | "N";

export interface KeyAttribute {
  readonly name: string;
  readonly type: AttributeType;
}

export interface IndexDefinition {
  readonly name: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
  /**
   * Attributes copied into the index besides the keys (projection INCLUDE; none: KEYS_ONLY).
   * Each is rewritten in the index whenever it changes on the item, at a write unit a change:
   * project only what a query filters on and what changes rarely (decision 0041).
   */
  readonly projectedAttributes: readonly string[];
}

export interface TableDefinition {
  /** Suffix of the physical name; the stack or the local runtime adds a prefix. */
  readonly logicalName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
  readonly indexes: readonly IndexDefinition[];
  /** Items carrying this attribute (epoch seconds) expire: rate-limit counters. */
  readonly timeToLiveAttribute: string;
}

/**
 * Single-table layout:
 * - job:  pk = JOB#<jobId>, sk = JOB
 * - run:  pk = JOB#<jobId>, sk = RUN#<scheduledFor epoch ms, zero-padded>
 * - sweep cursor: pk = SWEEP#<group>, sk = CURSOR
 * - ahead ledger: pk = SWEEP#AHEAD, sk = LEDGER (per group, the end of the last slice of one-offs
 *   made ahead a tick handed out, a failed sweep's rewind and the count of rewinds: decision 0059)
 *
 * due-index (sparse): jobs that still have a run to create, keyed by `<hour bucket>#<shard>`
 * and ordered by the due time, so a sweep reads only what is due; and one-offs made ahead at
 * create, keyed by `A#<hour of the firing>#<group>` and ordered by it, read by the slices the
 * tick hands out (their entries stay after the run is sent, behind the ledger: decisions 0058,
 * 0059).
 * repair-index (sparse, keys only): runs that are not finished, keyed by a repair partition and
 * ordered by the time the repair pass should look at them again; the pass reads the few it finds
 * due, so a lease, a heartbeat or a completion never rewrites the entry (decision 0041).
 * tenant-index: jobs (and their label pointers) by tenant, newest first, for listing; it holds
 * the keys and the type only, which a job keeps, so no write after a job's create rewrites it:
 * not an advance (decision 0041), nor a pause, a resume or a job's end (decision 0047).
 * dead-letter-index (sparse): dead-lettered runs (only they carry `deadTenant`) by tenant,
 * most recent first: the dead-letter queue's listing, replay and depth.
 */
export const JOBS_TABLE = {
  logicalName: "jobs",
  timeToLiveAttribute: "expiresAt",
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  indexes: [
    {
      name: "due-index",
      partitionKey: { name: "dueKey", type: "S" },
      sortKey: { name: "dueAt", type: "N" },
      projectedAttributes: [
        "jobId",
        "tenant",
        "type",
        "status",
        "nextRunAt",
        "schedule",
        "missedRuns",
        "maxLatenessMs",
      ],
    },
    {
      name: "repair-index",
      partitionKey: { name: "repairKey", type: "S" },
      sortKey: { name: "checkAt", type: "N" },
      projectedAttributes: [],
    },
    {
      name: "tenant-index",
      partitionKey: { name: "jobTenant", type: "S" },
      sortKey: { name: "createdAt", type: "N" },
      projectedAttributes: ["type"],
    },
    {
      name: "dead-letter-index",
      partitionKey: { name: "deadTenant", type: "S" },
      sortKey: { name: "finishedAt", type: "N" },
      projectedAttributes: [
        "runId",
        "jobId",
        "tenant",
        "type",
        "scheduledFor",
        "status",
        "attempt",
        "fence",
        "createdAt",
        "startedAt",
        "leaseExpiresAt",
        "workerId",
        "error",
        "final",
        "replays",
        "replayedAt",
        "replayedBy",
      ],
    },
  ],
} as const satisfies TableDefinition;

/**
 * The partition-key prefix of the webhook secrets' items (WEBHOOK#<tenant>, sk SECRET): IAM
 * denies every function but the API and the dispatcher any item under it (dynamodb:LeadingKeys;
 * decision 0036), so no other partition key may start with it.
 */
export const WEBHOOK_SECRET_KEY_PREFIX = "WEBHOOK#";

export const DUE_INDEX = JOBS_TABLE.indexes[0];
export const REPAIR_INDEX = JOBS_TABLE.indexes[1];
export const TENANT_INDEX = JOBS_TABLE.indexes[2];
export const DEAD_LETTER_INDEX = JOBS_TABLE.indexes[3];
