import { jobPk } from "../lambdas/adapters/dynamo/job-item";
import { RUN_SK_PREFIX } from "../lambdas/adapters/dynamo/run-item";
import { runIdOf } from "../lambdas/core/ids";

/**
 * Which jobs and runs an AWS request was about, for the record of a fault injected into it
 * (aws-faults.ts): the chaos test explains a repeated execution by a fault only if the fault
 * fell on a call about that run (or about its job, when the call named no run).
 *
 * Read from the request's input as the SDK holds it, marshalled or not: job ids (`j_...`),
 * run ids (`r_...`, in SQS message bodies), and a run item's key (pk `JOB#<job id>`, sk
 * `RUN#<ms>`, lambdas/adapters/dynamo/run-item.ts). SQS calls that name a message only by its
 * receipt handle (DeleteMessage, ChangeMessageVisibility) are matched to the runs of the
 * message that receive handed out, which ReceiptBook remembers.
 */
export interface FaultSubjects {
  readonly jobs: readonly string[];
  readonly runs: readonly string[];
}

const JOB_ID = /j_[0-9a-z]{20}/g;
const RUN_ID = /r_([0-9a-z]{20})_(\d{1,16})/g;
const RUN_SK = new RegExp(`^${RUN_SK_PREFIX}(\\d{1,16})$`);
const JOB_PK = new RegExp(`^${jobPk("")}(j_[0-9a-z]{20})$`);

/** The jobs and runs named anywhere in `text`. */
export function subjectsInText(text: string): FaultSubjects {
  const runs = new Set<string>();
  const jobs = new Set<string>(text.match(JOB_ID) ?? []);
  for (const [runId, suffix] of text.matchAll(RUN_ID)) {
    runs.add(runId);
    jobs.add(`j_${suffix}`);
  }
  return { jobs: [...jobs], runs: [...runs] };
}

/** A key attribute's string, plain (document client) or marshalled (`{ S: "..." }`). */
function keyString(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null && "S" in value && typeof value.S === "string")
    return value.S;
  return undefined;
}

/** The run a single-item DynamoDB request is about (its Key or Item is a run item's), if any. */
function runOfItemKey(input: Record<string, unknown>): string | undefined {
  const key = (input.Key ?? input.Item) as Record<string, unknown> | undefined;
  if (typeof key !== "object" || key === null) return undefined;
  const jobId = JOB_PK.exec(keyString(key.pk) ?? "")?.[1];
  const ms = RUN_SK.exec(keyString(key.sk) ?? "")?.[1];
  return jobId && ms ? runIdOf(jobId, Number(ms)) : undefined;
}

/** Receipt handles SQS handed out, with the runs and jobs of their messages. */
export class ReceiptBook {
  private readonly byHandle = new Map<string, FaultSubjects>();

  constructor(private readonly capacity = 20_000) {}

  /** Notes the messages a ReceiveMessage answered with. */
  noteReceived(output: unknown): void {
    const messages = (output as { Messages?: unknown } | undefined)?.Messages;
    if (!Array.isArray(messages)) return;
    for (const message of messages as Array<{ ReceiptHandle?: unknown; Body?: unknown }>) {
      if (typeof message.ReceiptHandle !== "string") continue;
      this.byHandle.set(message.ReceiptHandle, subjectsInText(String(message.Body ?? "")));
      // Oldest first out: a Map iterates in insertion order.
      if (this.byHandle.size > this.capacity) {
        const oldest = this.byHandle.keys().next().value;
        if (oldest !== undefined) this.byHandle.delete(oldest);
      }
    }
  }

  lookUp(handle: string): FaultSubjects | undefined {
    return this.byHandle.get(handle);
  }
}

/** The jobs and runs a request's input names (and its receipt handles stand for). */
export function subjectsOfInput(input: unknown, receipts?: ReceiptBook): FaultSubjects {
  const record = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
  const found = subjectsInText(JSON.stringify(record));
  const jobs = new Set(found.jobs);
  const runs = new Set(found.runs);
  const itemRun = runOfItemKey(record);
  if (itemRun) runs.add(itemRun);
  const handles = [
    record.ReceiptHandle,
    ...(Array.isArray(record.Entries)
      ? record.Entries.map((e: { ReceiptHandle?: unknown }) => e.ReceiptHandle)
      : []),
  ].filter((h): h is string => typeof h === "string");
  for (const handle of handles) {
    const known = receipts?.lookUp(handle);
    for (const job of known?.jobs ?? []) jobs.add(job);
    for (const run of known?.runs ?? []) runs.add(run);
  }
  return { jobs: [...jobs], runs: [...runs] };
}
