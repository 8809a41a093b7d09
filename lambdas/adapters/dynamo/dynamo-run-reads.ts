import { type DynamoDBDocumentClient, GetCommand, QueryCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import type { Page, RunStore } from "../../core/ports";
import type { Run } from "../../core/run";
import { DEAD_LETTER_INDEX } from "../../definitions/table";
import { jobPk } from "./job-item";
import { decodeCursor, encodeCursor, keyShapeOf } from "./page-cursor";
import { fromRunItem, RUN_SK_PREFIX, runKey, runSk } from "./run-item";

/**
 * The sort key of the last instant before `instant`, or of every run for an instant past them all
 * (Infinity: a first page), whose padded key would sort before the others'.
 */
function runSkBefore(instant: number): string {
  return runSk(Number.isSafeInteger(instant) ? instant - 1 : Number.MAX_SAFE_INTEGER);
}

/** The run store's reads: a run, a job's runs by instant or page, and the dead letters. */
export type RunReads = Pick<
  RunStore,
  | "getRun"
  | "listRunsBetween"
  | "latestRunBefore"
  | "listRunsBefore"
  | "listRecentRuns"
  | "listRuns"
  | "listDeadLetters"
  | "countDeadLetters"
>;

/**
 * RunStore's reads on DynamoDB, apart from its writes (dynamo-run-store.ts): a run's items sit
 * under its job's partition, sorted by their instant; dead letters in their sparse index.
 */
export class DynamoRunReads implements RunReads {
  constructor(
    protected readonly db: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  async getRun(jobId: string, scheduledFor: number): Promise<Run | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: runKey(jobId, scheduledFor), ConsistentRead: true }),
    );
    return Item ? fromRunItem(Item) : undefined;
  }

  async listRunsBetween(jobId: string, from: number, to: number): Promise<Run[]> {
    const runs: Run[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: "pk = :pk AND sk BETWEEN :from AND :to",
          ExpressionAttributeValues: { ":pk": jobPk(jobId), ":from": runSk(from), ":to": runSk(to) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      runs.push(...(page.Items ?? []).map(fromRunItem));
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return runs;
  }

  async latestRunBefore(jobId: string, instant: number): Promise<Run | undefined> {
    const [latest] = await this.listRunsBefore(jobId, instant, 1, true);
    return latest;
  }

  async listRunsBefore(jobId: string, instant: number, limit: number, consistent = false): Promise<Run[]> {
    const { Items } = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :from AND :to",
        ExpressionAttributeValues: { ":pk": jobPk(jobId), ":from": runSk(0), ":to": runSkBefore(instant) },
        ScanIndexForward: false,
        Limit: limit,
        ConsistentRead: consistent,
      }),
    );
    return (Items ?? []).map(fromRunItem);
  }

  async listRecentRuns(jobId: string, limit: number): Promise<Run[]> {
    const { Items } = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": jobPk(jobId), ":prefix": RUN_SK_PREFIX },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return (Items ?? []).map(fromRunItem);
  }

  async listRuns(jobId: string, limit: number, cursor?: string): Promise<Page<Run>> {
    const pk = jobPk(jobId);
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": pk, ":prefix": RUN_SK_PREFIX },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: decodeCursor(
          cursor,
          keyShapeOf(),
          (key) => key.pk === pk && typeof key.sk === "string" && key.sk.startsWith(RUN_SK_PREFIX),
        ),
      }),
    );
    return { items: (result.Items ?? []).map(fromRunItem), cursor: encodeCursor(result.LastEvaluatedKey) };
  }

  async listDeadLetters(tenant: string, limit: number, cursor?: string): Promise<Page<Run>> {
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: DEAD_LETTER_INDEX.name,
        KeyConditionExpression: "deadTenant = :t",
        ExpressionAttributeValues: { ":t": tenant },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: decodeCursor(
          cursor,
          keyShapeOf(DEAD_LETTER_INDEX),
          (key) => key.deadTenant === tenant,
        ),
      }),
    );
    return { items: (result.Items ?? []).map(fromRunItem), cursor: encodeCursor(result.LastEvaluatedKey) };
  }

  async countDeadLetters(): Promise<number> {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new ScanCommand({
          TableName: this.tableName,
          IndexName: DEAD_LETTER_INDEX.name,
          Select: "COUNT",
          ExclusiveStartKey: start,
        }),
      );
      count += page.Count ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    return count;
  }
}
