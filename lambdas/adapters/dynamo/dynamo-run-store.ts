import { type DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { LeaseGrant, Page, RepairCandidate, RunOutcome, RunStore } from "../../core/ports";
import type { Run } from "../../core/run";
import { REPAIR_INDEX } from "../../definitions/table";
import { applied, isConditionFailure, putIfAbsent } from "./conditions";
import { jobPk } from "./job-item";
import { decodeCursor, encodeCursor } from "./page-cursor";
import { fromRepairItem, fromRunItem, RUN_SK_PREFIX, runKey, toRunItem } from "./run-item";

const STATUS = { "#status": "status" };
/** A run that exists and is pending, or whose lease has lapsed. */
const LEASABLE =
  "attribute_exists(pk) AND (#status = :pending OR (#status = :leased AND leaseExpiresAt <= :now))";

/** RunStore on DynamoDB. Every state change is one conditional update on the run's own key. */
export class DynamoRunStore implements RunStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  createRun(run: Run): Promise<"created" | "exists"> {
    return putIfAbsent(this.db, this.tableName, toRunItem(run));
  }

  async getRun(jobId: string, scheduledFor: number): Promise<Run | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: runKey(jobId, scheduledFor), ConsistentRead: true }),
    );
    return Item ? fromRunItem(Item) : undefined;
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
          (key) => key.pk === pk && typeof key.sk === "string" && key.sk.startsWith(RUN_SK_PREFIX),
        ),
      }),
    );
    return { items: (result.Items ?? []).map(fromRunItem), cursor: encodeCursor(result.LastEvaluatedKey) };
  }

  async leaseRun(jobId: string, scheduledFor: number, grant: LeaseGrant): Promise<Run | undefined> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression:
            "SET #status = :leased, leaseExpiresAt = :until, startedAt = :starts, workerId = :worker, " +
            "receiptHandle = :receipt ADD fence :one, attempt :one",
          ConditionExpression: LEASABLE,
          ExpressionAttributeNames: STATUS,
          ExpressionAttributeValues: {
            ":leased": "leased",
            ":pending": "pending",
            ":one": 1,
            ":until": grant.leaseExpiresAt,
            ":worker": grant.workerId,
            ":receipt": grant.receiptHandle,
            ":now": grant.now,
            ":starts": grant.startsAt,
          },
          ReturnValues: "ALL_NEW",
        }),
      );
      return Attributes ? fromRunItem(Attributes) : undefined;
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  async finishRun(jobId: string, scheduledFor: number, fence: number, outcome: RunOutcome) {
    let receiptHandle: string | undefined;
    let final = false;
    const done = await applied(async () => {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression:
            outcome.error === undefined
              ? "SET #status = :status, finishedAt = :now REMOVE repairKey, checkAt, receiptHandle, #error"
              : "SET #status = :status, finishedAt = :now, #error = :error REMOVE repairKey, checkAt, receiptHandle",
          ConditionExpression: "fence = :fence AND #status = :leased",
          ExpressionAttributeNames: { ...STATUS, "#error": "error" },
          ExpressionAttributeValues: {
            ":status": outcome.status,
            ":now": outcome.now,
            ":fence": fence,
            ":leased": "leased",
            ...(outcome.error === undefined ? {} : { ":error": outcome.error }),
          },
          ReturnValues: "ALL_OLD",
        }),
      );
      receiptHandle = typeof Attributes?.receiptHandle === "string" ? Attributes.receiptHandle : undefined;
      final = Attributes?.final === true;
    });
    return done ? { receiptHandle, final } : undefined;
  }

  async abandonRun(
    jobId: string,
    scheduledFor: number,
    status: "cancelled" | "missed",
    reason: string,
    now: number,
  ): Promise<void> {
    await applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression:
            "SET #status = :status, finishedAt = :now, #error = :reason REMOVE repairKey, checkAt, receiptHandle",
          ConditionExpression: LEASABLE,
          ExpressionAttributeNames: { ...STATUS, "#error": "error" },
          ExpressionAttributeValues: {
            ":status": status,
            ":reason": reason,
            ":now": now,
            ":pending": "pending",
            ":leased": "leased",
          },
        }),
      ),
    );
  }

  async queryRepairCandidates(
    repairKey: string,
    before: number,
    limit: number,
    cursor?: string,
  ): Promise<Page<RepairCandidate>> {
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: REPAIR_INDEX.name,
        KeyConditionExpression: "repairKey = :k AND checkAt <= :before",
        ExpressionAttributeValues: { ":k": repairKey, ":before": before },
        ExclusiveStartKey: decodeCursor(cursor),
        Limit: limit,
      }),
    );
    return { items: (result.Items ?? []).map(fromRepairItem), cursor: encodeCursor(result.LastEvaluatedKey) };
  }

  async rescheduleCheck(run: RepairCandidate, expectedCheckAt: number, checkAt: number): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(run.jobId, run.scheduledFor),
          UpdateExpression: "SET checkAt = :checkAt",
          ConditionExpression: "checkAt = :expected",
          ExpressionAttributeValues: { ":checkAt": checkAt, ":expected": expectedCheckAt },
        }),
      ),
    );
  }
}
