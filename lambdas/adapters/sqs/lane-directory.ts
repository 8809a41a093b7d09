import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { type LaneRetirement, laneKeyOf } from "../../core/ports";
import { applied, isConditionFailure } from "../dynamo/conditions";
import { LaneJanitor } from "./lane-janitor";
import { laneEntryKey, lanePk, laneQueueName, queueNameOf } from "./lane-keys";

/**
 * Lanes: one SQS queue per (tenant, type), so a worker asking for type X never sees Y, and one
 * tenant's backlog sits in its own queue instead of in front of everyone else's runs.
 *
 * A lane is created on first use, with the attributes of the stack's template run queue
 * (visibility timeout = default lease, retention, redrive to the run dead-letter queue,
 * encryption), named `<template queue name>_<hash of tenant and type>[-<generation>]` so that
 * IAM can grant exactly the queues of this stack: stack names have no `_`, so no other stack's
 * queue name starts with this stack's run queue name and an underscore (decision 0009).
 *
 * Each lane has two items (decision 0019):
 * - its lookup record (pk LANE#<type>, sk TENANT#<tenant>), so the lease step finds the lanes of
 *   the types a worker asks for;
 * - its registry entry (pk LANES#<shard>, sk <tenant>\n<type>), which says when a sender last
 *   used it and carries its life cycle, so that idle lanes can be found and deleted
 *   (lane-janitor.ts). A sender touches the entry on its first send and then at most every
 *   LANE_TOUCH_MS; a lane the janitor is deleting is replaced by the next generation (SQS
 *   refuses a deleted queue's name for 60 s).
 */
export class LaneDirectory {
  private readonly opened = new Map<string, { url: Promise<string>; at: number }>();
  /** Lanes whose queue was found gone (a restarted local emulator): created again on next use. */
  private readonly gone = new Set<string>();
  private readonly byType = new Map<string, { lanes: Promise<Lane[]>; at: number }>();
  private template: Promise<Record<string, string>> | undefined;
  private janitor: LaneJanitor | undefined;

  constructor(
    private readonly sqs: SQSClient,
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly templateQueueUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The lane's queue URL. The first use in this process, and any use LANE_TOUCH_MS after the
   * last touch, marks the lane used (or creates it); in between the URL is served from memory.
   */
  laneFor(tenant: string, type: string): Promise<string> {
    const key = `${tenant}\n${type}`;
    const now = this.now();
    const open = this.opened.get(key);
    if (open && now - open.at < LANE_TOUCH_MS) return open.url;
    const url = this.open(tenant, type, now);
    url.catch(() => this.opened.delete(key)); // try again next time
    this.opened.set(key, { url, at: now });
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

  /** Deletes the lanes no sender has used since `idleBefore` whose queues are empty (lane-janitor.ts). */
  async retireIdle(idleBefore: number, now: number, budgetMs: number): Promise<LaneRetirement> {
    this.janitor ??= new LaneJanitor(this.sqs, this.db, this.tableName);
    const result = await this.janitor.retireIdle(idleBefore, now, budgetMs);
    for (const { tenant, type } of result.retired) this.opened.delete(`${tenant}\n${type}`);
    if (result.retired.length > 0) this.byType.clear();
    return result;
  }

  /** A lane whose queue is gone (the local emulator restarted) is created again on next use. */
  forget(url: string): void {
    const name = queueNameOf(url);
    const base = name.replace(/-\d+$/, "");
    for (const key of [...this.opened.keys()]) {
      const [tenant = "", type = ""] = key.split("\n");
      if (laneQueueName(this.templateQueueUrl, tenant, type) === base) {
        this.opened.delete(key);
        this.gone.add(key);
      }
    }
    this.byType.clear();
  }

  /** A lane's queue name without a generation: what a listening worker's session policy names. */
  laneName(tenant: string, type: string): string {
    return laneQueueName(this.templateQueueUrl, tenant, type);
  }

  /**
   * A listening worker found one of these lanes' queues deleted (a restarted local emulator, or
   * another container's cache): all of them are opened afresh on next use, made again where
   * their entry still names a deleted queue, since a queue found gone has usually gone with the
   * others. URLs of no lane of these pairs change nothing.
   */
  forgetIfGone(
    pairs: ReadonlyArray<{ readonly tenant: string; readonly type: string }>,
    gone: readonly string[],
  ): void {
    const named = new Set(gone.map((url) => queueNameOf(url).replace(/-\d+$/, "")));
    if (!pairs.some(({ tenant, type }) => named.has(this.laneName(tenant, type)))) return;
    for (const { tenant, type } of pairs) {
      const key = `${tenant}\n${type}`;
      this.opened.delete(key);
      this.gone.add(key);
      this.byType.delete(type);
    }
  }

  /** Marks a live lane used and returns its URL; creates the lane if there is none to touch. */
  private async open(tenant: string, type: string, now: number): Promise<string> {
    const key = `${tenant}\n${type}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      if (!this.gone.has(key)) {
        const touched = await this.touch(tenant, type, now);
        if (touched) return touched;
      }
      const created = await this.create(tenant, type, now);
      if (created) {
        this.gone.delete(key);
        return created;
      }
      // Another sender (or the janitor) changed the entry meanwhile: read it again.
    }
    throw new Error(`lane of tenant ${tenant} and type ${type}: its registry entry kept changing`);
  }

  /** Sets lastUsedAt (and cancels a janitor's claim) on a live lane's entry; its URL, if live. */
  private async touch(tenant: string, type: string, now: number): Promise<string | undefined> {
    try {
      const output = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: laneEntryKey(tenant, type),
          UpdateExpression: "SET lastUsedAt = :now REMOVE retiringAt",
          ConditionExpression: "attribute_exists(queueUrl) AND attribute_not_exists(deleting)",
          ExpressionAttributeValues: { ":now": now },
          ReturnValues: "ALL_NEW",
        }),
      );
      const url = output?.Attributes?.queueUrl;
      return typeof url === "string" ? url : undefined;
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  /**
   * Creates the lane's queue and records it: the same generation again when the entry is live
   * (its queue was found gone), the next one when the entry is being deleted or was deleted.
   * Undefined when the entry changed between the read and the write.
   */
  private async create(tenant: string, type: string, now: number): Promise<string | undefined> {
    const read = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: laneEntryKey(tenant, type), ConsistentRead: true }),
    );
    const entry = read?.Item;
    const generation = Number(entry?.generation ?? 0);
    const live = typeof entry?.queueUrl === "string" && entry.deleting !== true;
    const next = entry === undefined || live ? generation : generation + 1;
    const name = laneQueueName(this.templateQueueUrl, tenant, type, next);
    const created = await this.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: await this.templateAttributes() }),
    );
    const QueueUrl = created?.QueueUrl;
    if (!QueueUrl) throw new Error(`SQS returned no URL for lane ${name}`);
    // The lookup record first: an entry never names a queue the lease step cannot find.
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: lanePk(type), sk: `TENANT#${tenant}`, tenant, type, queueUrl: QueueUrl },
      }),
    );
    this.byType.delete(type);
    // A generation replacing one whose deletion the janitor had not finished hands it the old
    // queue to delete (this role may not delete queues; the tick's may).
    const unfinished = entry?.deleting === true ? entry.queueUrl : entry?.retiredUrl;
    const recorded = await applied(() =>
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...laneEntryKey(tenant, type),
            tenant,
            type,
            queueUrl: QueueUrl,
            generation: next,
            lastUsedAt: now,
            ...(typeof unfinished === "string" && unfinished !== QueueUrl ? { retiredUrl: unfinished } : {}),
          },
          ...(entry === undefined
            ? { ConditionExpression: "attribute_not_exists(pk)" }
            : {
                ConditionExpression: "generation = :generation AND lastUsedAt = :lastUsedAt",
                ExpressionAttributeValues: {
                  ":generation": entry.generation,
                  ":lastUsedAt": entry.lastUsedAt,
                },
              }),
        }),
      ),
    );
    return recorded ? QueueUrl : undefined;
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

/** A sender marks a lane used at most this often (per process); the janitor's idle time is days. */
export const LANE_TOUCH_MS = 6 * 3_600_000;
