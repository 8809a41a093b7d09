import { DeleteQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type { LaneRetirement } from "../../core/ports";
import { applied } from "../dynamo/conditions";
import { LANE_REGISTRY_SHARDS, lanePk, laneRegistryPk } from "./lane-keys";
import { isQueueGone } from "./queue-errors";

/** A claim older than this was left by a janitor that died: the next one may take it over. */
export const CLAIM_EXPIRES_MS = 10 * 60_000;
/** A deleted lane's entry (its generation) is kept this long, then removed. */
export const TOMBSTONE_KEEP_MS = 86_400_000;
/** The queue counts that must all be 0 before a lane is deleted. */
const COUNTS = [
  "ApproximateNumberOfMessages",
  "ApproximateNumberOfMessagesNotVisible",
  "ApproximateNumberOfMessagesDelayed",
] as const;

interface Entry {
  readonly pk: string;
  readonly sk: string;
  readonly tenant: string;
  readonly type: string;
  readonly queueUrl?: string;
  readonly generation: number;
  readonly lastUsedAt: number;
  readonly retiringAt?: number;
  readonly deleting?: boolean;
  readonly deletedAt?: number;
  /** A previous generation's queue whose deletion a sender's new generation cut short. */
  readonly retiredUrl?: string;
}

/**
 * Deletes lanes no sender has used since `idleBefore` (decision 0019). Each lane goes through
 * steps that are each one conditional write, so a sender that touches the lane at any point
 * wins, and a janitor killed at any point leaves a state the next one finishes:
 *
 * 1. claim: `retiringAt` set, if `lastUsedAt` is still what was read (a sender's touch removes
 *    the claim and moves `lastUsedAt`);
 * 2. the queue's visible, in-flight and delayed counts read: with a message left, the claim is
 *    dropped and the lane kept (a type no worker serves keeps its lane and its runs);
 * 3. confirm: `deleting` set, if the claim is still ours. From here a sender makes the next
 *    generation instead of using this queue;
 * 4. the queue deleted, the lookup record deleted (if it still names this queue), the entry
 *    turned into a tombstone that keeps the generation for a day.
 */
export class LaneJanitor {
  constructor(
    private readonly sqs: SQSClient,
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async retireIdle(idleBefore: number, now: number, budgetMs: number): Promise<LaneRetirement> {
    const stopAt = Date.now() + budgetMs;
    const result: {
      examined: number;
      retired: Array<{ tenant: string; type: string }>;
      kept: number;
      errors: string[];
      finished: boolean;
    } = { examined: 0, retired: [], kept: 0, errors: [], finished: true };
    for (let shard = 0; shard < LANE_REGISTRY_SHARDS && result.finished; shard++) {
      let start: Record<string, unknown> | undefined;
      do {
        if (Date.now() >= stopAt) {
          result.finished = false;
          break;
        }
        const page = await this.db.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: "pk = :pk",
            ExpressionAttributeValues: { ":pk": laneRegistryPk(shard) },
            ExclusiveStartKey: start,
          }),
        );
        for (const entry of (page.Items ?? []) as Entry[]) {
          result.examined += 1;
          try {
            const outcome = await this.retireOne(entry, idleBefore, now);
            if (outcome === "retired") result.retired.push({ tenant: entry.tenant, type: entry.type });
            if (outcome === "kept") result.kept += 1;
          } catch (error) {
            result.errors.push(`${entry.tenant}/${entry.type}: ${String(error)}`);
          }
        }
        start = page.LastEvaluatedKey;
      } while (start);
    }
    return result;
  }

  private async retireOne(
    entry: Entry,
    idleBefore: number,
    now: number,
  ): Promise<"retired" | "kept" | "active" | "raced"> {
    if (entry.deletedAt !== undefined) {
      if (now - entry.deletedAt >= TOMBSTONE_KEEP_MS) await this.forgetTombstone(entry);
      return "active";
    }
    if (entry.deleting === true) return (await this.finish(entry, now)) ? "retired" : "raced";
    if (entry.retiredUrl !== undefined) await this.deleteRetired(entry, entry.retiredUrl);
    if (entry.lastUsedAt >= idleBefore || entry.queueUrl === undefined) return "active";
    if (entry.retiringAt !== undefined && now - entry.retiringAt < CLAIM_EXPIRES_MS) return "active";

    const claimed = await applied(() =>
      this.update(
        entry,
        "SET retiringAt = :now",
        "lastUsedAt = :lastUsedAt AND attribute_not_exists(deleting)",
        {
          ":now": now,
          ":lastUsedAt": entry.lastUsedAt,
        },
      ),
    );
    if (!claimed) return "raced";
    if (!(await this.isEmpty(entry.queueUrl))) {
      await applied(() => this.update(entry, "REMOVE retiringAt", "retiringAt = :now", { ":now": now }));
      return "kept";
    }
    const confirmed = await applied(() =>
      this.update(entry, "SET deleting = :yes REMOVE retiringAt", "retiringAt = :now", {
        ":now": now,
        ":yes": true,
      }),
    );
    if (!confirmed) return "raced";
    return (await this.finish({ ...entry, deleting: true }, now)) ? "retired" : "raced";
  }

  /** Steps after the confirm: each may be repeated, so a janitor killed midway is finished later. */
  private async finish(entry: Entry, now: number): Promise<boolean> {
    if (entry.queueUrl !== undefined) {
      await this.deleteQueue(entry.queueUrl);
      const queueUrl = entry.queueUrl;
      await applied(() =>
        this.db.send(
          new DeleteCommand({
            TableName: this.tableName,
            Key: { pk: lanePk(entry.type), sk: `TENANT#${entry.tenant}` },
            ConditionExpression: "queueUrl = :url",
            ExpressionAttributeValues: { ":url": queueUrl },
          }),
        ),
      );
    }
    return applied(() =>
      this.update(
        entry,
        "SET deletedAt = :now REMOVE queueUrl, deleting",
        "generation = :generation AND deleting = :yes",
        { ":now": now, ":generation": entry.generation, ":yes": true },
      ),
    );
  }

  /** Deletes a previous generation's queue (empty: it was confirmed so) and forgets it. */
  private async deleteRetired(entry: Entry, url: string): Promise<void> {
    await this.deleteQueue(url);
    await applied(() => this.update(entry, "REMOVE retiredUrl", "retiredUrl = :url", { ":url": url }));
  }

  private async deleteQueue(url: string): Promise<void> {
    await this.sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch((error: unknown) => {
      if (!isQueueGone(error)) throw error;
    });
  }

  private async isEmpty(queueUrl: string): Promise<boolean> {
    try {
      const { Attributes = {} } = await this.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...COUNTS] }),
      );
      return COUNTS.every((name) => Number(Attributes[name] ?? 0) === 0);
    } catch (error) {
      if (isQueueGone(error)) return true;
      throw error;
    }
  }

  private forgetTombstone(entry: Entry): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: entry.pk, sk: entry.sk },
          ConditionExpression: "deletedAt = :deletedAt",
          ExpressionAttributeValues: { ":deletedAt": entry.deletedAt },
        }),
      ),
    );
  }

  private update(entry: Entry, expression: string, condition: string, values: Record<string, unknown>) {
    return this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: entry.pk, sk: entry.sk },
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
      }),
    );
  }
}
