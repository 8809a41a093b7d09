import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type { DueJob, Job, JobSummary } from "../../core/job";
import type { AheadEntry, AheadLedger, AheadLedgerMove, JobFilter, JobStore, Page } from "../../core/ports";
import { DUE_INDEX, TENANT_INDEX } from "../../definitions/table";
import {
  AHEAD_LEDGER_KEY,
  countRewindExpression,
  ledgerOfItem,
  moveExpression,
  rewindExpression,
} from "./ahead-ledger";
import { batchGetItems } from "./batch-get";
import { applied, putIfAbsent } from "./conditions";
import { dueAttributes, fromDueItem, fromJobItem, JOB_SK, jobIdOfPk, jobPk, toJobItem } from "./job-item";
import { LABEL_SK_PREFIX, labelItems, labelPartition } from "./label-items";
import { decodeCursor, encodeCursor, keyShapeOf } from "./page-cursor";

const sweepCursorKey = (group: number) => ({ pk: `SWEEP#${String(group).padStart(4, "0")}`, sk: "CURSOR" });

/**
 * JobStore on DynamoDB: conditional writes on deterministic keys, no transactions. Labels are
 * filed as pointer items (label-items.ts), written before and removed after their job's write.
 */
/** Rewinds of one group tried before giving up (each lost only to a tick's write landing between). */
const REWIND_ATTEMPTS = 3;

export class DynamoJobStore implements JobStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async createJob(job: Job): Promise<"created" | "exists"> {
    // Pointers first: a crash between leaves pointers to no job, which match nothing.
    await this.fileLabels(job, []);
    return putIfAbsent(this.db, this.tableName, toJobItem(job));
  }

  async fileLabels(job: Pick<Job, "jobId" | "tenant" | "createdAt" | "labels">, removed: readonly string[]) {
    const puts = labelItems(job).map((item) => ({ PutRequest: { Item: item } }));
    const deletes = removed
      .filter((key) => job.labels?.[key] === undefined)
      .map((key) => ({ DeleteRequest: { Key: { pk: jobPk(job.jobId), sk: `${LABEL_SK_PREFIX}${key}` } } }));
    let requests: Record<string, unknown>[] = [...puts, ...deletes];
    // At most 20 labels: one batch (25 a call), its unprocessed items tried again.
    while (requests.length > 0) {
      const result = await this.db.send(
        new BatchWriteCommand({ RequestItems: { [this.tableName]: requests.slice(0, 25) } }),
      );
      requests = [
        ...((result.UnprocessedItems?.[this.tableName] ?? []) as Record<string, unknown>[]),
        ...requests.slice(25),
      ];
    }
  }

  async getJob(jobId: string, eventual = false): Promise<Job | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: jobPk(jobId), sk: JOB_SK },
        ConsistentRead: !eventual,
      }),
    );
    return Item ? fromJobItem(Item) : undefined;
  }

  async getJobs(jobIds: readonly string[]): Promise<ReadonlyMap<string, Job>> {
    const keys = [...new Set(jobIds)].map((id) => ({ pk: jobPk(id), sk: JOB_SK }));
    const items = await batchGetItems(this.db, this.tableName, keys, true);
    return new Map(items.map(fromJobItem).map((job) => [job.jobId, job]));
  }

  async queryDue(
    dueKey: string,
    before: number,
    cursor?: string,
  ): Promise<Page<DueJob> & { readUnits: number }> {
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: DUE_INDEX.name,
        KeyConditionExpression: "dueKey = :k AND dueAt < :before",
        ExpressionAttributeValues: { ":k": dueKey, ":before": before },
        ExclusiveStartKey: decodeCursor(cursor, keyShapeOf(DUE_INDEX)),
        ReturnConsumedCapacity: "TOTAL",
      }),
    );
    return {
      items: (result.Items ?? []).map(fromDueItem),
      cursor: encodeCursor(result.LastEvaluatedKey),
      readUnits: result.ConsumedCapacity?.CapacityUnits ?? 0,
    };
  }

  async queryAhead(
    aheadKey: string,
    from: number,
    before: number,
    cursor?: string,
  ): Promise<Page<AheadEntry> & { readUnits: number }> {
    if (before <= from) return { items: [], cursor: undefined, readUnits: 0 };
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: DUE_INDEX.name,
        KeyConditionExpression: "dueKey = :k AND dueAt BETWEEN :from AND :last",
        ExpressionAttributeValues: { ":k": aheadKey, ":from": from, ":last": before - 1 },
        ProjectionExpression: "jobId, dueAt",
        ExclusiveStartKey: decodeCursor(cursor, keyShapeOf(DUE_INDEX)),
        ReturnConsumedCapacity: "TOTAL",
      }),
    );
    return {
      items: (result.Items ?? []).map((item) => ({ jobId: String(item.jobId), at: Number(item.dueAt) })),
      cursor: encodeCursor(result.LastEvaluatedKey),
      readUnits: result.ConsumedCapacity?.CapacityUnits ?? 0,
    };
  }

  async advanceJob(
    jobId: string,
    from: number,
    next: number | undefined,
    now: number,
    last?: number,
    made?: { readonly from: number; readonly through: number },
  ): Promise<boolean> {
    const due = next === undefined ? undefined : dueAttributes(jobId, next, now);
    // The runs made (decision 0051): through this one now, from the first the schedule made.
    const madeSet =
      made === undefined ? "" : ", madeThrough = :madeThrough, madeFrom = if_not_exists(madeFrom, :madeFrom)";
    const moveOn =
      due === undefined
        ? last === undefined
          ? { UpdateExpression: `SET updatedAt = :now${madeSet} REMOVE nextRunAt, dueKey, dueAt`, values: {} }
          : {
              UpdateExpression: `SET updatedAt = :now, lastFiringAt = :last${madeSet} REMOVE nextRunAt, dueKey, dueAt`,
              values: { ":last": last },
            }
        : {
            UpdateExpression: `SET updatedAt = :now, nextRunAt = :next, dueKey = :dueKey, dueAt = :next${madeSet}`,
            values: { ":next": due.dueAt, ":dueKey": due.dueKey },
          };
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: jobPk(jobId), sk: JOB_SK },
          UpdateExpression: moveOn.UpdateExpression,
          // A job paused or cancelled meanwhile keeps its state and stays out of the index.
          ConditionExpression: "nextRunAt = :from AND #status = :active",
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: {
            ":now": now,
            ":from": from,
            ":active": "active",
            ...moveOn.values,
            ...(made === undefined ? {} : { ":madeThrough": made.through, ":madeFrom": made.from }),
          },
        }),
      ),
    );
  }

  async closeCancelledJob(jobId: string, from: number): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: jobPk(jobId), sk: JOB_SK },
          UpdateExpression: "REMOVE nextRunAt, dueKey, dueAt",
          ConditionExpression: "nextRunAt = :from AND #status = :cancelled",
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: { ":from": from, ":cancelled": "cancelled" },
        }),
      ),
    );
  }

  async completeJob(jobId: string, now: number, last?: number): Promise<boolean> {
    const ofLast =
      last === undefined ? "" : " AND (attribute_not_exists(lastFiringAt) OR lastFiringAt = :last)";
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: jobPk(jobId), sk: JOB_SK },
          UpdateExpression: "SET #status = :completed, updatedAt = :now",
          ConditionExpression: `#status = :active AND attribute_not_exists(nextRunAt)${ofLast}`,
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: {
            ":completed": "completed",
            ":active": "active",
            ":now": now,
            ...(last === undefined ? {} : { ":last": last }),
          },
        }),
      ),
    );
  }

  claimRunSlot(jobId: string, expected: number | undefined, runAt: number): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: jobPk(jobId), sk: JOB_SK },
          // updatedAt moves on by a millisecond: a replaceJob that read the job before fails its
          // condition and reads again, instead of writing the old active run back.
          UpdateExpression: "SET activeRunAt = :runAt ADD updatedAt :one",
          ConditionExpression:
            expected === undefined ? "attribute_not_exists(activeRunAt)" : "activeRunAt = :expected",
          ExpressionAttributeValues: {
            ":runAt": runAt,
            ":one": 1,
            ...(expected === undefined ? {} : { ":expected": expected }),
          },
        }),
      ),
    );
  }

  replaceJob(job: Job, expectedUpdatedAt: number): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: toJobItem(job),
          ConditionExpression: "updatedAt = :expected",
          ExpressionAttributeValues: { ":expected": expectedUpdatedAt },
        }),
      ),
    );
  }

  /**
   * A page of the tenant's jobs, newest first: the keys from the tenant index (its own entries,
   * or a label's pointer items), then the jobs read in one batch and checked against the filter
   * (tenant, every label, status, type) on the job items themselves. The index holds only the
   * keys and the type (decisions 0041, 0047): the listing's other fields change as jobs advance
   * or end, and a projected copy would be rewritten each time. The type filter runs in the
   * index too, where the entries are the tenant's own, so a page filtered by type reads few
   * jobs; a status filter reads the jobs of each page it looks through.
   */
  async listJobs(
    tenant: string,
    filter: JobFilter,
    limit: number,
    cursor?: string,
  ): Promise<Page<JobSummary>> {
    const [first] = filter.labels ?? [];
    const partition = first ? labelPartition(tenant, first[0], first[1]) : tenant;
    // The index holds the type, which a job keeps; the status is checked on the job items.
    const indexFilter = first || filter.type === undefined ? undefined : "#type = :type";
    const items: JobSummary[] = [];
    let startKey = decodeCursor(
      cursor,
      keyShapeOf(TENANT_INDEX),
      (key) => key.jobTenant === partition && typeof key.createdAt === "number",
    );
    const matches = (job: Job) =>
      job.tenant === tenant &&
      (filter.labels ?? []).every(([k, v]) => job.labels?.[k] === v) &&
      (filter.status === undefined || job.status === filter.status) &&
      (filter.type === undefined || job.type === filter.type);
    // With a filter a page may match fewer than asked for: read on, a bounded number of times.
    for (let round = 0; round < 10; round++) {
      const result = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: TENANT_INDEX.name,
          KeyConditionExpression: "jobTenant = :partition",
          ...(indexFilter === undefined
            ? {}
            : { FilterExpression: indexFilter, ExpressionAttributeNames: { "#type": "type" } }),
          ExpressionAttributeValues: {
            ":partition": partition,
            ...(indexFilter === undefined ? {} : { ":type": filter.type }),
          },
          ScanIndexForward: false,
          Limit: limit - items.length,
          ExclusiveStartKey: startKey,
        }),
      );
      // The index holds no job id: a job's and its label pointers' partition key names it.
      const ids = (result.Items ?? []).map((item) => jobIdOfPk(item.pk));
      const stored = await this.getJobs(ids);
      const found = ids.flatMap((id) => {
        const job = stored.get(id);
        return job ? [job] : [];
      });
      for (const job of filter.show ? await filter.show(found) : found) if (matches(job)) items.push(job);
      startKey = result.LastEvaluatedKey;
      if (items.length >= limit || startKey === undefined) break;
    }
    return { items, cursor: encodeCursor(startKey) };
  }

  async getSweepCursor(group: number): Promise<number | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: sweepCursorKey(group), ConsistentRead: true }),
    );
    return typeof Item?.bucket === "number" ? Item.bucket : undefined;
  }

  async getAheadCursor(group: number): Promise<number | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: sweepCursorKey(group), ConsistentRead: true }),
    );
    return typeof Item?.aheadThrough === "number" ? Item.aheadThrough : undefined;
  }

  async getAheadLedger(): Promise<AheadLedger> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: AHEAD_LEDGER_KEY, ConsistentRead: true }),
    );
    return ledgerOfItem(Item);
  }

  async moveAheadLedger(moves: readonly AheadLedgerMove[]): Promise<boolean> {
    if (moves.length === 0) return true;
    return applied(() =>
      this.db.send(
        new UpdateCommand({ TableName: this.tableName, Key: AHEAD_LEDGER_KEY, ...moveExpression(moves) }),
      ),
    );
  }

  async rewindAheadLedger(group: number, from: number): Promise<void> {
    // Two conditional writes, each atomic: the rewind moved back, or (already as far back) only
    // counted while that holds. A tick's write that removes the rewind between the two refuses
    // the count, and the rewind is written again. Bounded: a sweep whose rewind keeps losing
    // throws, and SQS hands its whole slice out again.
    for (let attempt = 0; attempt < REWIND_ATTEMPTS; attempt++) {
      const update = (expression: ReturnType<typeof countRewindExpression>) =>
        applied(() =>
          this.db.send(
            new UpdateCommand({ TableName: this.tableName, Key: AHEAD_LEDGER_KEY, ...expression }),
          ),
        );
      if (await update(rewindExpression(group, from))) return;
      if (await update(countRewindExpression(group, from))) return;
    }
    throw new Error(`the ahead ledger's group ${group} changed under ${REWIND_ATTEMPTS} rewinds in a row`);
  }

  async advanceSweepCursor(group: number, bucket: number): Promise<void> {
    await applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: sweepCursorKey(group),
          UpdateExpression: "SET #bucket = :b",
          ConditionExpression: "attribute_not_exists(#bucket) OR #bucket < :b",
          ExpressionAttributeNames: { "#bucket": "bucket" },
          ExpressionAttributeValues: { ":b": bucket },
        }),
      ),
    );
  }
}
