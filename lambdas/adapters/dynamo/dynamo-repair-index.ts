import { type DynamoDBDocumentClient, QueryCommand, ScanCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { repairKeyOf } from "../../core/keys";
import type { Page, RepairCandidate } from "../../core/ports";
import type { Run } from "../../core/run";
import { REPAIR_INDEX } from "../../definitions/table";
import { batchGetItems } from "./batch-get";
import { applied } from "./conditions";
import { decodeCursor, encodeCursor, keyShapeOf } from "./page-cursor";
import { FINAL, STATUS } from "./run-expressions";
import { fromRepairItem, fromRunItem, RUN_SK_PREFIX, runKey } from "./run-item";

/**
 * The run store's repair-index side (decisions 0003, 0043, 0045): a run's entry put, moved and
 * removed, the pass's query of due checks, and the local reset's scan of runs with no entry.
 */
export class DynamoRepairIndex {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async settleFinalRun(jobId: string, scheduledFor: number): Promise<void> {
    await applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression: "REMOVE repairKey, checkAt",
          // Only a finished run: a replayed one is unfinished again and needs its entry.
          ConditionExpression: "attribute_exists(checkAt) AND NOT #status IN (:pending, :leased)",
          ExpressionAttributeNames: STATUS,
          ExpressionAttributeValues: { ":pending": "pending", ":leased": "leased" },
        }),
      ),
    );
  }

  async trackFinalRun(jobId: string, scheduledFor: number, checkAt: number): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression: "SET checkAt = :checkAt, repairKey = :repairKey",
          ConditionExpression:
            "attribute_exists(pk) AND attribute_not_exists(checkAt) AND #final = :true AND NOT #status IN (:pending, :leased)",
          ExpressionAttributeNames: { ...STATUS, ...FINAL },
          ExpressionAttributeValues: {
            ":checkAt": checkAt,
            ":repairKey": repairKeyOf(jobId),
            ":true": true,
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
        ExclusiveStartKey: decodeCursor(cursor, keyShapeOf(REPAIR_INDEX)),
        Limit: limit,
      }),
    );
    // The index holds keys only (decision 0041): the candidates' runs are read whole, strongly
    // consistent; one that left the index since (it finished) is not a candidate any more.
    const keys = (result.Items ?? []).map((item) => ({ pk: item.pk, sk: item.sk }));
    const runs = await batchGetItems(this.db, this.tableName, keys, true);
    const order = new Map(keys.map((key, i) => [`${key.pk}\u0000${key.sk}`, i]));
    const items = runs
      .filter(
        (run) => run.repairKey === repairKey && typeof run.checkAt === "number" && run.checkAt <= before,
      )
      .sort((a, b) => (order.get(`${a.pk}\u0000${a.sk}`) ?? 0) - (order.get(`${b.pk}\u0000${b.sk}`) ?? 0))
      .map(fromRepairItem);
    return { items, cursor: encodeCursor(result.LastEvaluatedKey) };
  }

  async scanUntracked(limit: number, cursor?: string): Promise<Page<Run>> {
    const result = await this.db.send(
      new ScanCommand({
        TableName: this.tableName,
        FilterExpression:
          "begins_with(sk, :prefix) AND attribute_not_exists(checkAt) AND " +
          "(#status IN (:pending, :leased) OR (#final = :true AND #status <> :cancelled))",
        ExpressionAttributeNames: { ...STATUS, ...FINAL },
        ExpressionAttributeValues: {
          ":prefix": RUN_SK_PREFIX,
          ":pending": "pending",
          ":leased": "leased",
          ":true": true,
          ":cancelled": "cancelled",
        },
        ExclusiveStartKey: decodeCursor(cursor, keyShapeOf()),
        Limit: limit,
      }),
    );
    return { items: (result.Items ?? []).map(fromRunItem), cursor: encodeCursor(result.LastEvaluatedKey) };
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
