import { type DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { Clock } from "../../core/clock";
import { endingFiringOf, isEndedBy } from "../../core/one-off-end";
import type { Admission, TenantQuotas } from "../../core/ports";
import type { SchedulerSettings } from "../../definitions/settings";
import { TENANT_INDEX } from "../../definitions/table";
import { batchGetItems } from "./batch-get";
import { applied, isConditionFailure } from "./conditions";
import { jobIdOfPk } from "./job-item";
import { fromRunItem, runKey } from "./run-item";

/**
 * Most creates a process counts in one write (a block of this second's tokens, decision 0041).
 * A block is as large as the creates the process admitted for the tenant in its last second,
 * within this bound, so a steady stream costs a count write every 25 creates, and one create
 * now and then one write each.
 */
export const MAX_TOKEN_BLOCK = 25;
/** A count that refused a create is recounted from the jobs at most this often per tenant. */
export const RECOUNT_EVERY_MS = 10 * 60_000;
/** When a tenant at its active-jobs quota may try again (jobs end, or a recount finds fewer). */
const ACTIVE_JOBS_RETRY_SECONDS = 60;
/** A job-type quota does not lift by itself: try again when the tenant's types have changed. */
const JOB_TYPES_RETRY_SECONDS = 3_600;

type Limits = Pick<
  SchedulerSettings,
  "tenantCreatesPerSecond" | "tenantMaxActiveJobs" | "tenantMaxJobTypes" | "runRetentionDays"
>;

/**
 * Tenant quotas in two items per tenant (pk QUOTA#<tenant>):
 * - sk COUNTS: `activeJobs` (counted up by each create) and this second's creates
 *   (`#second`, `creates`): one conditional update a block of creates, which both counts and
 *   checks;
 * - sk TYPES: the string set of job types the tenant uses, written only when a type is new
 *   to it (this process remembers the ones it has seen, for KNOWN_TYPES_MS). A type goes
 *   back when its lane was deleted as idle and no active or paused job has it (releaseType);
 *   a process that still remembers it then admits it without writing it again, for at most
 *   KNOWN_TYPES_MS, the one way the types count can err on the lenient side.
 *
 * A process counts creates in blocks (MAX_TOKEN_BLOCK): one write takes several of this second's
 * tokens and counts as many active jobs, and the process admits creates from the block until
 * the second ends. Tokens a block took and the second did not use stay counted: the rate errs
 * only on the strict side, and the active-jobs count too, until its next recount; a recount
 * cannot see the tokens other processes still hold, so just after one the count may err on the
 * lenient side by those (at most MAX_TOKEN_BLOCK - 1 a process).
 *
 * Active jobs are not counted down when a job ends (that would be a write on every job's
 * last step, and a step that can be cut short): when the count would refuse a create, the
 * tenant's active and paused jobs are counted (the tenant index's keys, the jobs' statuses), at most every
 * RECOUNT_EVERY_MS, and the difference added. Between recounts the count errs only on the
 * strict side.
 */
export class DynamoTenantQuotas implements TenantQuotas {
  /** Per tenant, the types this process saw in its TYPES set, and when it read them. */
  private readonly knownTypes = new Map<string, { types: Set<string>; at: number }>();
  /**
   * Per tenant, the block this process holds: its second, the tokens left of it, and the
   * creates admitted in that second (the size of the next block).
   */
  private readonly blocks = new Map<string, { second: number; left: number; used: number }>();
  /** Per tenant, the block being taken now: a create that finds no token waits for it. */
  private readonly taking = new Map<string, Promise<void>>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly limits: Limits,
    private readonly now: () => number = Date.now,
  ) {}

  async admitCreate(tenant: string, type: string, clock: Pick<Clock, "now">): Promise<Admission> {
    const types = await this.admitType(tenant, type);
    if (!types.admitted) return types;
    if (this.limits.tenantCreatesPerSecond <= 0 && this.limits.tenantMaxActiveJobs <= 0) {
      return { admitted: true };
    }
    // A token of the block held, or the block being taken: one write at a time per tenant, so
    // creates side by side (a bulk create's) share a block instead of each taking one.
    let second: number;
    for (;;) {
      const held = this.blocks.get(tenant);
      // Counted in the second it is admitted in, read again after each wait, and never in one
      // earlier than its process counted in: judged by the second it arrived in, a create that
      // waited past the second's turn met a window already full or closed, and was refused while
      // the tenant was under its rate (issue 28's push mix: about 200 of 2,000 creates at 115 a
      // second, against 200 a second).
      second = Math.max(Math.floor(clock.now() / 1000), held?.second ?? 0);
      if (held?.second === second && held.left > 0) {
        held.left--;
        held.used++;
        return { admitted: true };
      }
      const taking = this.taking.get(tenant);
      if (!taking) break;
      await taking;
    }
    let taken: () => void = () => undefined;
    this.taking.set(tenant, new Promise<void>((done) => (taken = done)));
    try {
      if (await this.takeBlock(tenant, second)) return { admitted: true };
    } finally {
      this.taking.delete(tenant);
      taken();
    }
    return this.refusal(tenant, type, clock, second);
  }

  /** Takes a block of this second's tokens (one of them this create's), or one token if it does not fit. */
  private async takeBlock(tenant: string, second: number): Promise<boolean> {
    const held = this.blocks.get(tenant);
    const usedThisSecond = held?.second === second ? held.used : 0;
    // As many as were admitted this second so far, or in the second before (a stream going on);
    // after a quiet spell, one.
    const recent = usedThisSecond > 0 ? usedThisSecond : held?.second === second - 1 ? held.used : 1;
    const wanted = Math.min(MAX_TOKEN_BLOCK, Math.max(1, recent));
    // Counted in this second's window, or opening a new one: try the likelier first.
    const attempts = held?.second !== second ? [true, false] : [false, true];
    for (const size of wanted > 1 ? [wanted, 1] : [1]) {
      for (const opening of attempts) {
        if (await this.count(tenant, second, opening, size)) {
          this.blocks.set(tenant, { second, left: size - 1, used: usedThisSecond + 1 });
          return true;
        }
      }
    }
    return false;
  }

  async releaseCreate(tenant: string): Promise<void> {
    if (this.limits.tenantMaxActiveJobs <= 0) return;
    // Never below zero; a count already at zero has nothing to give back.
    await applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: countsKey(tenant),
          UpdateExpression: "ADD activeJobs :minusOne",
          ConditionExpression: "activeJobs > :zero",
          ExpressionAttributeValues: { ":minusOne": -1, ":zero": 0 },
        }),
      ),
    );
  }

  /** One conditional update that counts `size` creates if every quota allows them all. */
  private async count(tenant: string, second: number, opening: boolean, size = 1): Promise<boolean> {
    const rate = this.limits.tenantCreatesPerSecond;
    const max = this.limits.tenantMaxActiveJobs;
    if ((rate > 0 && size > rate) || (max > 0 && size > max)) return false;
    const conditions: string[] = [];
    const values: Record<string, number> = { ":one": size };
    if (max > 0) {
      // Room for the whole block: activeJobs + size <= max.
      conditions.push("(attribute_not_exists(activeJobs) OR activeJobs <= :max)");
      values[":max"] = max - size;
    }
    if (rate > 0 && opening) conditions.push("(attribute_not_exists(#second) OR #second < :second)");
    if (rate > 0 && !opening) {
      conditions.push("#second = :second AND #creates <= :rate");
      values[":rate"] = rate - size;
    }
    if (opening || rate > 0) values[":second"] = second;
    // DynamoDB refuses names and values an expression does not use.
    const update = opening
      ? "SET #second = :second, #creates = :one ADD activeJobs :one"
      : "ADD #creates :one, activeJobs :one";
    const names = opening || rate > 0 ? NAMES : { "#creates": NAMES["#creates"] };
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: countsKey(tenant),
          UpdateExpression: update,
          ConditionExpression: conditions.join(" AND "),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /** Why neither update went through; a count at the active-jobs quota is recounted once. */
  private async refusal(
    tenant: string,
    type: string,
    clock: Pick<Clock, "now">,
    countedIn: number,
  ): Promise<Admission> {
    const now = Math.max(clock.now(), countedIn * 1000);
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: countsKey(tenant), ConsistentRead: true }),
    );
    // The stored window may be later than this create's second (another process counted in
    // it): the create is judged and counted there, as it is admitted now, not when it arrived.
    const stored = Number(Item?.second);
    const second = Math.max(Math.floor(now / 1000), Number.isFinite(stored) ? stored : 0);
    const rate = this.limits.tenantCreatesPerSecond;
    if (rate > 0 && Item?.second === second && Number(Item?.creates) >= rate) {
      return { admitted: false, quota: "creates-per-second", limit: rate, retryAfterSeconds: 1 };
    }
    const max = this.limits.tenantMaxActiveJobs;
    const recountedAt = Number(Item?.recountedAt ?? Number.NEGATIVE_INFINITY);
    if (
      max > 0 &&
      Number(Item?.activeJobs) >= max &&
      now - recountedAt >= RECOUNT_EVERY_MS &&
      (await this.claimRecount(tenant, now))
    ) {
      await this.recount(tenant, Number(Item?.activeJobs));
      return this.admitCreate(tenant, type, clock);
    }
    if (max > 0 && Number(Item?.activeJobs) >= max) {
      return {
        admitted: false,
        quota: "active-jobs",
        limit: max,
        retryAfterSeconds: ACTIVE_JOBS_RETRY_SECONDS,
      };
    }
    // The window moved or a count changed between the updates and the read: one more round.
    return (await this.count(tenant, second, true)) || (await this.count(tenant, second, false))
      ? { admitted: true }
      : { admitted: false, quota: "creates-per-second", limit: rate, retryAfterSeconds: 1 };
  }

  /**
   * Counts the tenant's active and paused jobs and adds the difference to the stored count
   * (not a plain SET: creates counted while the query ran would be lost, and the count would
   * err on the lenient side).
   */
  private async recount(tenant: string, counted: number): Promise<void> {
    const actual = await this.liveJobs(tenant);
    await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: countsKey(tenant),
        UpdateExpression: "ADD activeJobs :delta",
        ExpressionAttributeValues: { ":delta": actual - counted },
      }),
    );
  }

  /**
   * Takes the tenant's recount for this RECOUNT_EVERY_MS, before reading anything: one process
   * recounts at a time, and a recount that fails (a timeout) is not tried again by every refused
   * create after it (each would read all the tenant's jobs); those are refused until the next.
   */
  private async claimRecount(tenant: string, now: number): Promise<boolean> {
    return applied(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: countsKey(tenant),
          UpdateExpression: "SET recountedAt = :now",
          ConditionExpression: "attribute_not_exists(recountedAt) OR recountedAt <= :before",
          ExpressionAttributeValues: { ":now": now, ":before": now - RECOUNT_EVERY_MS },
        }),
      ),
    );
  }

  /** A type the tenant has used, or a new one within its quota (recorded then). */
  async admitType(tenant: string, type: string): Promise<Admission> {
    const max = this.limits.tenantMaxJobTypes;
    if (max <= 0) return { admitted: true };
    let known = this.knownTypes.get(tenant);
    if (!known || this.now() - known.at >= KNOWN_TYPES_MS) {
      known = { types: new Set(), at: this.now() };
      this.knownTypes.set(tenant, known);
    }
    if (known.types.has(type)) return { admitted: true };
    try {
      const output = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: quotaPk(tenant), sk: "TYPES" },
          UpdateExpression: "ADD #types :type",
          ConditionExpression:
            "attribute_not_exists(#types) OR contains(#types, :name) OR size(#types) < :max",
          ExpressionAttributeNames: { "#types": "types" },
          ExpressionAttributeValues: { ":type": new Set([type]), ":name": type, ":max": max },
          ReturnValues: "ALL_NEW",
        }),
      );
      const stored = output?.Attributes?.types;
      for (const name of stored instanceof Set ? stored : [type]) known.types.add(String(name));
      return { admitted: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { admitted: false, quota: "job-types", limit: max, retryAfterSeconds: JOB_TYPES_RETRY_SECONDS };
    }
  }

  async releaseType(tenant: string, type: string): Promise<boolean> {
    if (this.limits.tenantMaxJobTypes <= 0) return false;
    if ((await this.liveJobs(tenant, type)) > 0) return false;
    await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: quotaPk(tenant), sk: "TYPES" },
        UpdateExpression: "DELETE #types :type",
        ExpressionAttributeNames: { "#types": "types" },
        ExpressionAttributeValues: { ":type": new Set([type]) },
      }),
    );
    this.knownTypes.get(tenant)?.types.delete(type);
    return true;
  }

  /** How many of these jobs are live, read RECOUNT_PARALLEL_REQUESTS BatchGetItems at a time. */
  private async countLive(keys: readonly Record<string, unknown>[]): Promise<number> {
    const retentionMs = this.limits.runRetentionDays * 86_400_000;
    const keptSince = retentionMs > 0 ? this.now() - retentionMs : Number.NEGATIVE_INFINITY;
    const chunks: Record<string, unknown>[][] = [];
    for (let start = 0; start < keys.length; start += 100) chunks.push(keys.slice(start, start + 100));
    let live = 0;
    const next = async (): Promise<void> => {
      for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
        const jobs = (await batchGetItems(this.db, this.tableName, chunk, false)).map(liveFieldsOf);
        // A one-off its run ended is not live, though stored active (decision 0057): its run says.
        const waiting = jobs.flatMap((job) => {
          const at = endingFiringOf(job);
          return at === undefined ? [] : [runKey(job.jobId, at)];
        });
        // An unreadable run ends nothing: its job counts, on the strict side.
        const runs = (await batchGetItems(this.db, this.tableName, waiting, false)).flatMap((item) => {
          try {
            return [fromRunItem(item)];
          } catch {
            return [];
          }
        });
        const ended = (job: LiveFields) =>
          isEndedBy(
            job,
            runs.find((run) => run.jobId === job.jobId),
            keptSince,
          );
        live += jobs.filter((job) => LIVE.has(job.status) && !ended(job)).length;
      }
    };
    await Promise.all(Array.from({ length: Math.min(RECOUNT_PARALLEL_REQUESTS, chunks.length) }, next));
    return live;
  }

  /**
   * The tenant's active and paused jobs (of `type` only, if given): the keys from the tenant
   * index, the statuses from the job items (the index holds no status, so a job's end or pause
   * never rewrites the tenant's index partition: decision 0047). With a type it stops at the
   * first page that finds one (whether any is all it is asked). A recount reads each of the
   * tenant's jobs once (0.5 read unit a job of up to 4 KB), at most every RECOUNT_EVERY_MS and
   * only when the count refused a create (claimRecount), 16 requests in flight: 100,000 jobs in
   * a second or two in AWS (1,000 BatchGetItems, 50,000 read units: $0.006).
   */
  private async liveJobs(tenant: string, type?: string): Promise<number> {
    const ofType = type !== undefined;
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: TENANT_INDEX.name,
          KeyConditionExpression: "jobTenant = :tenant",
          ...(ofType
            ? {
                FilterExpression: "#type = :type",
                ExpressionAttributeNames: { "#type": "type" },
                ExpressionAttributeValues: { ":tenant": tenant, ":type": type },
              }
            : { ExpressionAttributeValues: { ":tenant": tenant } }),
          ExclusiveStartKey: start,
        }),
      );
      const keys = (page.Items ?? []).map((item) => ({ pk: item.pk, sk: item.sk }));
      count += await this.countLive(keys);
      start = page.LastEvaluatedKey;
    } while (start && !(ofType && count > 0));
    return count;
  }
}

/** BatchGetItem requests a recount keeps in flight (100 jobs each). */
const RECOUNT_PARALLEL_REQUESTS = 16;

/** The statuses a tenant's quota counts: a job that may still fire. */
const LIVE = new Set<string>(["active", "paused"]);

/** How long a process trusts the types it read from a tenant's TYPES set. */
export const KNOWN_TYPES_MS = RECOUNT_EVERY_MS;

/** Attribute names that are, or may become, DynamoDB reserved words. */
const NAMES = { "#second": "second", "#creates": "creates" };
const quotaPk = (tenant: string) => `QUOTA#${tenant}`;
const countsKey = (tenant: string) => ({ pk: quotaPk(tenant), sk: "COUNTS" });

/** What a recount reads of a job item: its status, and what says whether its run ended it. */
interface LiveFields {
  readonly jobId: string;
  readonly status: string;
  readonly schedule: { readonly kind: string };
  readonly nextRunAt: number | undefined;
  readonly lastFiringAt: number | undefined;
}

function liveFieldsOf(item: Record<string, unknown>): LiveFields {
  const number = (value: unknown) => (typeof value === "number" ? value : undefined);
  const schedule = item.schedule as { kind?: unknown } | undefined;
  return {
    jobId: jobIdOfPk(String(item.pk)),
    status: String(item.status),
    schedule: { kind: String(schedule?.kind) },
    nextRunAt: number(item.nextRunAt),
    lastFiringAt: number(item.lastFiringAt),
  };
}
