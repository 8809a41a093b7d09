import { createHash } from "node:crypto";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { laneKeyOf } from "../../core/ports";
import { LANE_SEPARATOR } from "../../definitions/queues";

/**
 * Lanes: one SQS queue per (tenant, type), so a worker asking for type X never sees Y, and one
 * tenant's backlog sits in its own queue instead of in front of everyone else's runs.
 *
 * A lane is created on first use, with the attributes of the stack's template run queue
 * (visibility timeout = default lease, retention, redrive to the run dead-letter queue,
 * encryption), named `<template queue name>_<hash of tenant and type>` so that IAM can grant
 * exactly the queues of this stack: stack names have no `_`, so no other stack's queue name
 * starts with this stack's run queue name and an underscore (decision 0009). Each lane is recorded in the table (pk LANE#<type>,
 * sk TENANT#<tenant>) so the lease step can find the lanes of the types a worker asks for.
 */
export class LaneDirectory {
  private readonly created = new Map<string, Promise<string>>();
  private readonly byType = new Map<string, { lanes: Promise<Lane[]>; at: number }>();
  private template: Promise<Record<string, string>> | undefined;

  constructor(
    private readonly sqs: SQSClient,
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly templateQueueUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The lane's queue URL; creates the queue and records it on this process's first use. */
  laneFor(tenant: string, type: string): Promise<string> {
    const key = `${tenant}\n${type}`;
    let url = this.created.get(key);
    if (!url) {
      url = this.create(tenant, type);
      url.catch(() => this.created.delete(key)); // try again next time
      this.created.set(key, url);
    }
    return url;
  }

  /**
   * The lanes holding runs of these types for these tenants, read again at most every
   * LANE_CACHE_MS. A worker never polls (or learns of) another tenant's lane.
   */
  async lanesOf(types: readonly string[], tenants: readonly string[]): Promise<Lane[]> {
    const lists = await Promise.all([...new Set(types)].map((type) => this.lanesOfType(type)));
    const served = new Set(tenants);
    return lists.flat().filter((lane) => served.has(lane.tenant));
  }

  /** A lane whose queue is gone (the local emulator restarted) is created again on next use. */
  forget(url: string): void {
    const name = queueNameOf(url);
    for (const key of [...this.created.keys()]) {
      const [tenant = "", type = ""] = key.split("\n");
      if (laneQueueName(this.templateQueueUrl, tenant, type) === name) this.created.delete(key);
    }
    this.byType.clear();
  }

  private lanesOfType(type: string): Promise<Lane[]> {
    const cached = this.byType.get(type);
    if (cached && this.now() - cached.at < LANE_CACHE_MS) return cached.lanes;
    const lanes = this.queryLanes(type);
    lanes.catch(() => this.byType.delete(type));
    this.byType.set(type, { lanes, at: this.now() });
    return lanes;
  }

  private async queryLanes(type: string): Promise<Lane[]> {
    const lanes: Lane[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": lanePk(type) },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        if (typeof item.queueUrl === "string" && typeof item.tenant === "string") {
          lanes.push({
            url: item.queueUrl,
            key: laneKeyOf({ tenant: item.tenant, type }),
            tenant: item.tenant,
          });
        }
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return lanes;
  }

  private async create(tenant: string, type: string): Promise<string> {
    const name = laneQueueName(this.templateQueueUrl, tenant, type);
    const { QueueUrl } = await this.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: await this.templateAttributes() }),
    );
    if (!QueueUrl) throw new Error(`SQS returned no URL for lane ${name}`);
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: lanePk(type), sk: `TENANT#${tenant}`, tenant, type, queueUrl: QueueUrl },
      }),
    );
    this.byType.delete(type);
    return QueueUrl;
  }

  private templateAttributes(): Promise<Record<string, string>> {
    this.template ??= this.sqs
      .send(
        new GetQueueAttributesCommand({
          QueueUrl: this.templateQueueUrl,
          AttributeNames: [
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "RedrivePolicy",
            "SqsManagedSseEnabled",
          ],
        }),
      )
      .then(({ Attributes = {} }) =>
        Object.fromEntries(
          Object.entries(Attributes).filter(([, value]) => value !== undefined && value !== ""),
        ),
      );
    this.template.catch(() => {
      this.template = undefined;
    });
    return this.template;
  }
}

/** A lane's queue, its key (laneKeyOf: tenant and type) and its tenant. */
export interface Lane {
  readonly url: string;
  readonly key: string;
  readonly tenant: string;
}

/** How long the lease step trusts its list of lanes; a new lane is seen within this. */
export const LANE_CACHE_MS = 2_000;

const lanePk = (type: string) => `LANE#${type}`;

/**
 * A lane's queue name: the template (run) queue's name, `_`, a hash of tenant and type. The
 * underscore is the one character stack names (and so this stack's other queue names) lack.
 */
export function laneQueueName(templateQueueUrl: string, tenant: string, type: string): string {
  return `${queueNameOf(templateQueueUrl)}${LANE_SEPARATOR}${laneHash(tenant, type)}`;
}
function laneHash(tenant: string, type: string): string {
  return createHash("sha256").update(`${tenant}\n${type}`).digest("hex").slice(0, 16);
}

function queueNameOf(url: string): string {
  return url.slice(url.lastIndexOf("/") + 1);
}
