import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { repairKeyOf } from "../../core/keys";
import type { RunEvent } from "../../core/lifecycle/transition";
import type { LeaseGrant, Page, RepairCandidate, RetryPlan, RunOutcome, RunStore } from "../../core/ports";
import type { Run, RunSeed } from "../../core/run";
import { JOBS_TABLE } from "../../definitions/table";
import { applied, isConditionFailure, putIfAbsent } from "./conditions";
import { DynamoRepairIndex } from "./dynamo-repair-index";
import { DynamoRunReads } from "./dynamo-run-reads";
import {
  FINAL,
  finalIs,
  HELD,
  LEASABLE,
  leavingOnFinish,
  STATUS,
  seededWrite,
  UNSTARTED_OR_LAPSED,
} from "./run-expressions";
import { fromRunItem, runKey, toRunItem } from "./run-item";
import { finishedRunOf, type Repeatable, repeatedItem } from "./run-write-answers";

/**
 * RunStore on DynamoDB: its writes here, its reads in DynamoRunReads. Every state change is one
 * conditional update on the run's own key.
 */
export class DynamoRunStore extends DynamoRunReads implements RunStore {
  /**
   * @param retentionSeconds how long a finished run (dead letters included) is kept: its item
   * gets the table's TTL attribute when it finishes, and loses it when it is replayed. 0: kept.
   */
  constructor(
    db: DynamoDBDocumentClient,
    tableName: string,
    private readonly retentionSeconds = 0,
  ) {
    super(db, tableName);
    this.repairIndex = new DynamoRepairIndex(db, tableName);
  }

  private readonly repairIndex: DynamoRepairIndex;

  /** The SET clause, names and values that give a run finishing at `now` its expiry. */
  private expiry(now: number): {
    set: string;
    names: Record<string, string>;
    values: Record<string, number>;
  } {
    if (this.retentionSeconds <= 0) return { set: "", names: {}, values: {} };
    return {
      set: ", #ttl = :ttl",
      names: { "#ttl": JOBS_TABLE.timeToLiveAttribute },
      values: { ":ttl": Math.floor(now / 1000) + this.retentionSeconds },
    };
  }

  createRun(run: Run): Promise<"created" | "exists"> {
    // A record created finished (a missed or cancelled firing) expires as a finished run does.
    const expires =
      run.finishedAt !== undefined && this.retentionSeconds > 0
        ? { [JOBS_TABLE.timeToLiveAttribute]: Math.floor(run.finishedAt / 1000) + this.retentionSeconds }
        : {};
    return putIfAbsent(this.db, this.tableName, { ...toRunItem(run), ...expires });
  }

  leaseRun(jobId: string, scheduledFor: number, grant: LeaseGrant): Promise<Run | undefined> {
    // At-most-once: a run leased before is never leased again (a replay resets attempt to 0).
    const guard = grant.firstOnly ? `${LEASABLE} AND attempt = :zero` : LEASABLE;
    // A run made but not written is written by its first lease (decision 0051), from its
    // scheduled instant on, as a written pending run is leasable (its availableAt).
    const seed = grant.seed && grant.seed.scheduledFor <= grant.startsAt ? grant.seed : undefined;
    const seeded = seededWrite(seed, guard, "added");
    return this.updateRun(
      {
        Key: runKey(jobId, scheduledFor),
        UpdateExpression:
          "SET #status = :leased, leaseExpiresAt = :until, availableAt = :until, startedAt = :starts, " +
          `workerId = :worker, receiptHandle = :receipt${seeded.set} ADD fence :one, attempt :one`,
        ConditionExpression: seeded.condition,
        ExpressionAttributeNames: { ...STATUS, ...seeded.names },
        ExpressionAttributeValues: {
          ":leased": "leased",
          ":pending": "pending",
          ":one": 1,
          ...(grant.firstOnly ? { ":zero": 0 } : {}),
          ":until": grant.leaseExpiresAt,
          ":worker": grant.workerId,
          ":receipt": grant.receiptHandle,
          ":starts": grant.startsAt,
          ...seeded.values,
        },
      },
      { jobId, scheduledFor, event: { kind: "lease", grant } },
    );
  }

  markLastRun(jobId: string, scheduledFor: number): Promise<Run | undefined> {
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      UpdateExpression: "SET #final = :true",
      ConditionExpression: `attribute_exists(pk) AND ${finalIs(false)} AND #status <> :cancelled`,
      ExpressionAttributeNames: { ...STATUS, ...FINAL },
      ExpressionAttributeValues: { ":true": true, ":cancelled": "cancelled" },
    });
  }

  async finishRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    outcome: RunOutcome,
    tenants?: readonly string[],
  ) {
    // A worker that serves no tenant holds no run (bindings always name one; IN () is invalid).
    if (tenants !== undefined && tenants.length === 0) return undefined;
    // A worker's completion also names the tenants it serves: one IN condition, no read first.
    const tenantValues = Object.fromEntries((tenants ?? []).map((tenant, i) => [`:tenant${i}`, tenant]));
    const tenantCondition =
      tenants === undefined ? "" : ` AND tenant IN (${Object.keys(tenantValues).join(", ")})`;
    const expiry = this.expiry(outcome.now);
    try {
      // A dead letter is filed in the dead-letter index under its tenant.
      const deadLetter = `${outcome.status === "dead-lettered" ? ", deadTenant = tenant" : ""}${expiry.set}`;
      const error = outcome.error === undefined ? "" : ", #error = :error";
      // A last run keeps its repair-index keys until its job is marked (settleFinalRun).
      const leaving = `${leavingOnFinish(outcome.final)}${outcome.error === undefined ? ", #error" : ""}`;
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression: `SET #status = :status, finishedAt = :now${error}${deadLetter} REMOVE ${leaving}`,
          ConditionExpression: `${HELD} AND ${finalIs(outcome.final)}${tenantCondition}`,
          ExpressionAttributeNames: { ...STATUS, ...FINAL, "#error": "error", ...expiry.names },
          ExpressionAttributeValues: {
            ...expiry.values,
            ":status": outcome.status,
            ":now": outcome.now,
            ":fence": fence,
            ":leased": "leased",
            ":true": true,
            ...(outcome.error === undefined ? {} : { ":error": outcome.error }),
            ...tenantValues,
          },
          ReturnValues: "ALL_OLD",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return finishedRunOf(Attributes ?? {});
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // Its own outcome, its answer lost (decision 0053): answered as recorded, with no handle
      // (the first write took it). A last run keeps its check time, so `tracked` reads the same.
      const item = await repeatedItem(this.db, this.tableName, error, {
        jobId,
        scheduledFor,
        event: { kind: "finish", fence, outcome, tenants },
      });
      return item && { ...finishedRunOf(item), receiptHandle: undefined };
    }
  }

  async retryRun(jobId: string, scheduledFor: number, fence: number, plan: RetryPlan) {
    return this.updateHeld(
      jobId,
      scheduledFor,
      fence,
      {
        UpdateExpression:
          "SET #status = :pending, retryAt = :retryAt, availableAt = :retryAt, checkAt = :checkAt, " +
          `repairKey = :repairKey, #error = :error${plan.failedAttempts ? ", failedAttempts = :failed" : ""} ` +
          "REMOVE leaseExpiresAt, receiptHandle",
        ExpressionAttributeNames: { "#error": "error" },
        ExpressionAttributeValues: {
          ":pending": "pending",
          ":retryAt": plan.retryAt,
          ":checkAt": plan.checkAt,
          ":repairKey": repairKeyOf(jobId),
          ":error": plan.error ?? "failed",
          ...(plan.failedAttempts ? { ":failed": plan.failedAttempts } : {}),
        },
      },
      "",
      { kind: "retry", fence, plan },
    );
  }

  async heartbeatRun(
    jobId: string,
    scheduledFor: number,
    fence: number,
    leaseExpiresAt: number,
    now: number,
  ) {
    return this.updateHeld(
      jobId,
      scheduledFor,
      fence,
      {
        UpdateExpression: "SET leaseExpiresAt = :until, availableAt = :until",
        ExpressionAttributeValues: { ":until": leaseExpiresAt, ":now": now },
      },
      " AND leaseExpiresAt > :now",
    );
  }

  /**
   * A conditional update of a run held with `fence`; the old receipt handle, or undefined. With
   * `repeat`, a refused write that meets its own effect answers as applied, with no handle (its
   * first write took it).
   */
  private async updateHeld(
    jobId: string,
    scheduledFor: number,
    fence: number,
    update: {
      UpdateExpression: string;
      ExpressionAttributeNames?: Record<string, string>;
      ExpressionAttributeValues: Record<string, unknown>;
    },
    extraCondition = "",
    repeat?: RunEvent,
  ): Promise<{ receiptHandle: string | undefined } | undefined> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression: update.UpdateExpression,
          ConditionExpression: HELD + extraCondition,
          ExpressionAttributeNames: { ...STATUS, ...update.ExpressionAttributeNames },
          ExpressionAttributeValues: {
            ...update.ExpressionAttributeValues,
            ":fence": fence,
            ":leased": "leased",
          },
          ReturnValues: "ALL_OLD",
          ...(repeat ? { ReturnValuesOnConditionCheckFailure: "ALL_OLD" } : {}),
        }),
      );
      return {
        receiptHandle: typeof Attributes?.receiptHandle === "string" ? Attributes.receiptHandle : undefined,
      };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (!repeat) return undefined;
      const item = await repeatedItem(this.db, this.tableName, error, { jobId, scheduledFor, event: repeat });
      return item ? { receiptHandle: undefined } : undefined;
    }
  }

  returnLease(jobId: string, scheduledFor: number, fence: number, now: number): Promise<Run | undefined> {
    return this.updateRun(
      {
        Key: runKey(jobId, scheduledFor),
        // The attempt the lease counted is taken back; the fence stays raised. Leasable from when
        // the lease started it (its second or its retry's, or later): never before it was due,
        // as the lifecycle's pending run is (transition.ts).
        UpdateExpression:
          "SET #status = :pending, availableAt = if_not_exists(startedAt, :now), attempt = attempt - :one " +
          "REMOVE leaseExpiresAt, receiptHandle",
        ConditionExpression: HELD,
        ExpressionAttributeNames: STATUS,
        ExpressionAttributeValues: {
          ":pending": "pending",
          ":leased": "leased",
          ":fence": fence,
          ":now": now,
          ":one": 1,
        },
      },
      { jobId, scheduledFor, event: { kind: "return-lease", fence, now } },
    );
  }

  async replayRun(
    jobId: string,
    scheduledFor: number,
    replay: {
      readonly by: string;
      readonly now: number;
      readonly checkAt: number;
      readonly keepsAttempts?: boolean | undefined;
    },
    from: "dead-lettered" | "missed" = "dead-lettered",
  ): Promise<Run | undefined> {
    const kept = replay.keepsAttempts === true;
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      UpdateExpression:
        `SET #status = :pending, ${kept ? "" : "attempt = :zero, "}availableAt = :now, checkAt = :checkAt, ` +
        "repairKey = :repairKey, replayedAt = :now, replayedBy = :by ADD replays :one " +
        `REMOVE deadTenant, finishedAt, retryAt, leaseExpiresAt, receiptHandle, #ttl${kept ? ", #error" : ""}`,
      ConditionExpression: "#status = :from",
      // A replayed run runs again: it must not expire while it does.
      ExpressionAttributeNames: {
        ...STATUS,
        "#ttl": JOBS_TABLE.timeToLiveAttribute,
        ...(kept ? { "#error": "error" } : {}),
      },
      // DynamoDB refuses a value the expressions do not use.
      ExpressionAttributeValues: {
        ":pending": "pending",
        ":from": from,
        ...(kept ? {} : { ":zero": 0 }),
        ":one": 1,
        ":checkAt": replay.checkAt,
        ":repairKey": repairKeyOf(jobId),
        ":now": replay.now,
        ":by": replay.by,
      },
    });
  }

  /**
   * One conditional update; the run after it, or undefined when its condition failed. With
   * `repeat`, a refused write that meets the event's own effect (its answer was lost and the
   * SDK sent it again: decision 0053) answers the run as it stands.
   */
  private async updateRun(
    input: Omit<ConstructorParameters<typeof UpdateCommand>[0], "TableName" | "ReturnValues">,
    repeat?: Repeatable,
  ): Promise<Run | undefined> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          ...input,
          TableName: this.tableName,
          ReturnValues: "ALL_NEW",
          ...(repeat ? { ReturnValuesOnConditionCheckFailure: "ALL_OLD" } : {}),
        }),
      );
      return Attributes ? fromRunItem(Attributes) : undefined;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (!repeat) return undefined;
      const item = await repeatedItem(this.db, this.tableName, error, repeat);
      return item && fromRunItem(item);
    }
  }

  async abandonRun(
    jobId: string,
    scheduledFor: number,
    status: "cancelled" | "missed" | "skipped",
    reason: string,
    now: number,
    final = false,
    seed?: RunSeed,
  ): Promise<Run | undefined> {
    const expiry = this.expiry(now);
    // A last run keeps its repair-index keys until its job is marked (settleFinalRun).
    const leaving = leavingOnFinish(final);
    // A seed that says otherwise of `final` writes nothing, as a stored run would refuse it.
    const seeded = seededWrite(
      seed?.final === final ? seed : undefined,
      `${UNSTARTED_OR_LAPSED} AND ${finalIs(final)}`,
      "set",
    );
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      UpdateExpression: `SET #status = :status, finishedAt = :now, #error = :reason${expiry.set}${seeded.set} REMOVE ${leaving}`,
      ConditionExpression: seeded.condition,
      ExpressionAttributeNames: { ...STATUS, ...FINAL, "#error": "error", ...expiry.names, ...seeded.names },
      ExpressionAttributeValues: {
        ...expiry.values,
        ":status": status,
        ":reason": reason,
        ":now": now,
        ":pending": "pending",
        ":leased": "leased",
        ":true": true,
        ...seeded.values,
      },
    });
  }

  async dropRetry(
    jobId: string,
    scheduledFor: number,
    drop: { readonly reason: string; readonly now: number; readonly final: boolean },
  ): Promise<Run | undefined> {
    const expiry = this.expiry(drop.now);
    const leaving = leavingOnFinish(drop.final);
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      // A dead letter is filed in the dead-letter index under its tenant, as finishRun's are.
      UpdateExpression: `SET #status = :dead, finishedAt = :now, #error = :reason, deadTenant = tenant${expiry.set} REMOVE ${leaving}`,
      ConditionExpression: `#status = :pending AND attempt >= :one AND ${finalIs(drop.final)}`,
      ExpressionAttributeNames: { ...STATUS, ...FINAL, "#error": "error", ...expiry.names },
      ExpressionAttributeValues: {
        ...expiry.values,
        ":dead": "dead-lettered",
        ":pending": "pending",
        ":one": 1,
        ":true": true,
        ":reason": drop.reason,
        ":now": drop.now,
      },
    });
  }

  async loseRun(
    jobId: string,
    scheduledFor: number,
    loss: { readonly reason: string; readonly now: number; readonly final: boolean },
  ): Promise<Run | undefined> {
    const expiry = this.expiry(loss.now);
    const leaving = leavingOnFinish(loss.final);
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      UpdateExpression: `SET #status = :lost, finishedAt = :now, #error = :reason${expiry.set} REMOVE ${leaving}`,
      ConditionExpression: `#status = :leased AND leaseExpiresAt <= :now AND ${finalIs(loss.final)}`,
      ExpressionAttributeNames: { ...STATUS, ...FINAL, "#error": "error", ...expiry.names },
      ExpressionAttributeValues: {
        ...expiry.values,
        ":lost": "lost",
        ":leased": "leased",
        ":true": true,
        ":reason": loss.reason,
        ":now": loss.now,
      },
    });
  }

  async setWake(jobId: string, scheduledFor: number, waiting: number, replacing?: number): Promise<boolean> {
    const free = `attribute_not_exists(wakes) OR wakes = :waiting${replacing === undefined ? "" : " OR wakes = :replacing"}`;
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(jobId, scheduledFor),
          UpdateExpression: "SET wakes = :waiting",
          ConditionExpression: `(#status = :pending OR #status = :leased) AND (${free})`,
          ExpressionAttributeNames: STATUS,
          ExpressionAttributeValues: {
            ":waiting": waiting,
            ":pending": "pending",
            ":leased": "leased",
            ...(replacing === undefined ? {} : { ":replacing": replacing }),
          },
        }),
      ),
    );
  }

  async revokeRun(
    jobId: string,
    scheduledFor: number,
    reason: string,
    now: number,
  ): Promise<Run | undefined> {
    const expiry = this.expiry(now);
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      // The fence goes up: the holder's heartbeat and completion no longer match it.
      UpdateExpression: `SET #status = :cancelled, finishedAt = :now, #error = :reason${expiry.set} ADD fence :one REMOVE repairKey, checkAt, receiptHandle, retryAt, leaseExpiresAt`,
      // A job's last run is never revoked: it is what ends the job.
      ConditionExpression: `(#status = :pending OR #status = :leased) AND ${finalIs(false)}`,
      ExpressionAttributeNames: { ...STATUS, ...FINAL, "#error": "error", ...expiry.names },
      ExpressionAttributeValues: {
        ...expiry.values,
        ":true": true,
        ":cancelled": "cancelled",
        ":pending": "pending",
        ":leased": "leased",
        ":reason": reason,
        ":now": now,
        ":one": 1,
      },
    });
  }

  async missRun(
    jobId: string,
    scheduledFor: number,
    miss: {
      readonly reason: string;
      readonly now: number;
      readonly final: boolean;
      readonly seed?: RunSeed | undefined;
    },
  ): Promise<Run | undefined> {
    const expiry = this.expiry(miss.now);
    const leaving = leavingOnFinish(miss.final);
    // Never started, never replayed, not asked for by hand (those run however late they are).
    const seeded = seededWrite(
      miss.seed?.final === miss.final ? miss.seed : undefined,
      `#status = :pending AND attempt = :zero AND attribute_not_exists(replays) AND attribute_not_exists(origin) AND ${finalIs(miss.final)}`,
      "set",
    );
    return this.updateRun({
      Key: runKey(jobId, scheduledFor),
      UpdateExpression: `SET #status = :missed, finishedAt = :now, #error = :reason${expiry.set}${seeded.set} REMOVE ${leaving}`,
      ConditionExpression: seeded.condition,
      ExpressionAttributeNames: { ...STATUS, ...FINAL, "#error": "error", ...expiry.names, ...seeded.names },
      ExpressionAttributeValues: {
        ...expiry.values,
        ":missed": "missed",
        ":pending": "pending",
        ":zero": 0,
        ":true": true,
        ":reason": miss.reason,
        ":now": miss.now,
        ...seeded.values,
      },
    });
  }

  settleFinalRun(jobId: string, scheduledFor: number): Promise<void> {
    return this.repairIndex.settleFinalRun(jobId, scheduledFor);
  }

  trackFinalRun(jobId: string, scheduledFor: number, checkAt: number): Promise<boolean> {
    return this.repairIndex.trackFinalRun(jobId, scheduledFor, checkAt);
  }

  queryRepairCandidates(
    repairKey: string,
    before: number,
    limit: number,
    cursor?: string,
  ): Promise<Page<RepairCandidate>> {
    return this.repairIndex.queryRepairCandidates(repairKey, before, limit, cursor);
  }

  scanUntracked(limit: number, cursor?: string): Promise<Page<Run>> {
    return this.repairIndex.scanUntracked(limit, cursor);
  }

  rescheduleCheck(run: RepairCandidate, expectedCheckAt: number, checkAt: number): Promise<boolean> {
    return this.repairIndex.rescheduleCheck(run, expectedCheckAt, checkAt);
  }
}
